package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// HelmRelease names the release and namespace a chart is rendered for.
type HelmRelease struct {
	Name, Namespace string
}

// Helm renders the chart at dir (a directory or a packaged .tgz) as helm
// template does, without a cluster: the chart loaded (a directory's links
// followed, as the helm command loads it), the values merged over the chart's and checked against its
// values.schema.json, the templates rendered by Helm's engine and the
// manifests split and sorted in install order. Every object is decoded
// strictly; all decoding errors are reported together. Helm's action
// package would do the same through a fake cluster client, at twice the
// dependencies to compile.
func Helm(ctx context.Context, dir string, rel HelmRelease, values map[string]any) ([]Object, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	vals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values,
		common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}, nil, false)
	if err != nil {
		return nil, fmt.Errorf("chart %s values: %w", dir, err)
	}
	var e engine.Engine // no cluster: lookup answers nothing, as in helm template
	files, err := e.RenderWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", dir, err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s manifests: %w", dir, err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("chart %s: %d hooks; the chart has none", dir, len(hooks))
	}
	var objs []Object
	var errs []error
	for _, m := range manifests {
		obj, err := DecodeStrict([]byte(m.Content))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s %s): %w", m.Name, m.Head.Kind, nameOf(m.Head), err))
			continue
		}
		o := Object{Kind: m.Head.Kind, YAML: []byte(m.Content), Obj: obj}
		if m.Head.Metadata != nil {
			o.Name = m.Head.Metadata.Name
		}
		var meta struct {
			Metadata struct{ Namespace string } `json:"metadata"`
		}
		if err := yaml.Unmarshal(o.YAML, &meta); err == nil {
			o.Namespace = meta.Metadata.Namespace
		}
		objs = append(objs, o)
	}
	if len(errs) > 0 {
		return objs, fmt.Errorf("chart %s: %w", dir, errors.Join(errs...))
	}
	return objs, nil
}

func nameOf(h *releaseutil.SimpleHead) string {
	if h == nil || h.Metadata == nil {
		return ""
	}
	return h.Metadata.Name
}
