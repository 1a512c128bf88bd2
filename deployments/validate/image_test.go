package validate

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/checkpointd/checkpointd/deployments/image"
)

// MaxImageBytes bounds the image's compressed size: the static binary
// (about 10.5 MB compressed in December 2026) and the CA bundle, with room
// to grow, but not room for a base distribution.
const MaxImageBytes = 20 << 20

var built struct {
	once sync.Once
	img  v1.Image
	err  error
	took time.Duration
}

// builtImage builds the real image once per test binary: go build of
// ./cmd/checkpointd (seconds when the build cache is warm).
func builtImage(t *testing.T) v1.Image {
	t.Helper()
	built.once.Do(func() {
		start := time.Now()
		built.img, built.err = image.Build(context.Background(), image.Options{ModuleRoot: "../..", Version: "v0.0.0-test"})
		built.took = time.Since(start)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.img
}

func dockerfileSpec(t *testing.T) ImageSpec {
	t.Helper()
	d, err := ParseDockerfile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec()
}

// TestImage builds the image as make image does, writes the tarball, reads
// it back both ways (Docker's manifest.json and the OCI layout), checks it
// against the Dockerfile and runs the binary in it.
func TestImage(t *testing.T) {
	img := builtImage(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "checkpointd-image.tar")
	if err := image.WriteFile(file, img, "checkpointd:test"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	t.Logf("built in %s: %s, tarball %.1f MB", built.took.Round(100*time.Millisecond), digest, float64(st.Size())/1e6)

	// docker load reads manifest.json.
	dimg, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("as a docker tarball: %v", err)
	}
	sameLayers(t, "docker tarball", dimg, img)

	// OCI tools read the layout.
	layoutDir := filepath.Join(dir, "layout")
	untar(t, file, layoutDir)
	idx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatalf("as an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "test" {
		t.Fatalf("OCI index %+v, want one manifest %s tagged test", im.Manifests, digest)
	}
	oimg, err := idx.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	sameLayers(t, "OCI layout", oimg, img)

	if err := errors.Join(CheckImage(oimg, dockerfileSpec(t), MaxImageBytes)...); err != nil {
		t.Fatal(err)
	}

	// The entrypoint runs (statically linked, so on this machine too).
	files, _, err := ImageFiles(oimg)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "checkpointd")
	if err := os.WriteFile(bin, files[image.BinaryPath].Data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "checkpointd v0.0.0-test" {
		t.Fatalf("checkpointd version in the image: %q, %v", out, err)
	}
}

func sameLayers(t *testing.T, what string, got, want v1.Image) {
	t.Helper()
	gc, err1 := got.ConfigName()
	wc, err2 := want.ConfigName()
	if err := errors.Join(err1, err2); err != nil || gc != wc {
		t.Fatalf("%s: config %s, built %s (%v)", what, gc, wc, err)
	}
	gl, err1 := got.Layers()
	wl, err2 := want.Layers()
	if err := errors.Join(err1, err2); err != nil || len(gl) != len(wl) {
		t.Fatalf("%s: %d layers, built %d (%v)", what, len(gl), len(wl), err)
	}
	for i := range gl {
		g, _ := gl[i].Digest()
		w, _ := wl[i].Digest()
		if g != w {
			t.Fatalf("%s: layer %d is %s, built %s", what, i, g, w)
		}
	}
}

func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrokenImageFails changes one thing at a time in the built image and
// wants CheckImage to name it.
func TestBrokenImageFails(t *testing.T) {
	img := builtImage(t)
	spec := dockerfileSpec(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	withConfig := func(f func(*v1.Config)) v1.Image {
		c := *cf.Config.DeepCopy()
		f(&c)
		out, err := mutate.Config(img, c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	shell, err := layerOf(map[string][]byte{"bin/sh": []byte("#!")})
	if err != nil {
		t.Fatal(err)
	}
	withShell, err := mutate.AppendLayers(img, shell)
	if err != nil {
		t.Fatal(err)
	}
	// A dynamically linked program as the entrypoint.
	dynamic, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	dynImg, err := image.New(dynamic, []byte("-----BEGIN CERTIFICATE-----\n"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		img     v1.Image
		maxSize int64
		want    string
	}{
		{"root user", withConfig(func(c *v1.Config) { c.User = "0:0" }), MaxImageBytes, `"0:0" is root`},
		{"no user", withConfig(func(c *v1.Config) { c.User = "" }), MaxImageBytes, "the image would run as root"},
		{"other entrypoint", withConfig(func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }), MaxImageBytes, "image entrypoint"},
		{"other command", withConfig(func(c *v1.Config) { c.Cmd = []string{"run"} }), MaxImageBytes, "image command"},
		{"metrics address not set", withConfig(func(c *v1.Config) { c.Env = c.Env[:1] }), MaxImageBytes, "lacks CHECKPOINTD_CHECKPOINTD_METRICS_ADDRESS"},
		{"port not exposed", withConfig(func(c *v1.Config) { c.ExposedPorts = nil }), MaxImageBytes, "image exposes"},
		{"a shell", withShell, MaxImageBytes, "image holds /bin/sh"},
		{"dynamic binary", dynImg, MaxImageBytes, "dynamically linked"},
		{"too big", img, 1 << 20, "compressed, more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := errors.Join(CheckImage(tc.img, spec, tc.maxSize)...)
			if err == nil {
				t.Fatal("the planted fault passed validation")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

func layerOf(files map[string][]byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
}
