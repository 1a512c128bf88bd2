package validate

import (
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// scheme knows the API types the manifests may hold; anything else is an
// error.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

var strict = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme,
	serializerjson.SerializerOptions{Yaml: true, Strict: true})

// DecodeStrict decodes one manifest into its Kubernetes API type. Unknown
// or duplicate fields, a value of the wrong type and a kind the scheme does
// not know are errors, as kubectl's server-side field validation makes them.
func DecodeStrict(manifest []byte) (runtime.Object, error) {
	obj, _, err := strict.Decode(manifest, nil, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Object is one manifest out of a kustomize build, decoded.
type Object struct {
	Kind, Name, Namespace string
	YAML                  []byte
	Obj                   runtime.Object
}

// Kustomize runs a kustomize build of dir in process (what kubectl apply -k
// and kustomize build do) on the real file system and decodes every object
// strictly. All decoding errors are reported together.
func Kustomize(dir string) ([]Object, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []Object
	var errs []error
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := Object{Kind: r.GetKind(), Name: r.GetName(), Namespace: r.GetNamespace(), YAML: y}
		if o.Obj, err = DecodeStrict(y); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err))
			continue
		}
		objs = append(objs, o)
	}
	if len(errs) > 0 {
		return objs, fmt.Errorf("kustomize build %s: %w", dir, errors.Join(errs...))
	}
	return objs, nil
}
