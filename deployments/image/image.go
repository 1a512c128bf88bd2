// Package image builds checkpointd's container image without a container
// daemon: the same image deployments/Dockerfile describes (a static binary,
// CA certificates and a non-root user on an empty base), written as a tarball
// that holds both an OCI image layout and Docker's manifest.json, so
// `docker load`, `podman load` and OCI tools (skopeo, crane, containerd's
// `ctr import`) all read it.
//
// Nothing is pulled: the base is empty, the binary is built with the local Go
// toolchain and the CA certificates come from the build machine.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the final stage of deployments/Dockerfile sets. The tests compare
// these with the Dockerfile, so the two builds cannot drift apart.
const (
	BinaryPath = "/usr/local/bin/checkpointd"
	CACertPath = "/etc/ssl/certs/ca-certificates.crt"
	PasswdPath = "/etc/passwd"
	GroupPath  = "/etc/group"
	// User is distroless' "nonroot" user and group.
	User        = "65532:65532"
	MetricsPort = "9464/tcp"
	// ConfigPath is where the default command reads the configuration; the
	// Kubernetes manifests and the compose file mount it there.
	ConfigPath = "/etc/checkpointd/mm2-checkpoint.yaml"
)

var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"run", "--config", ConfigPath}
	// Env: checkpointd.metrics.address defaults to 127.0.0.1:9464, which
	// nothing outside the container reaches.
	Env = []string{"CHECKPOINTD_CHECKPOINTD_METRICS_ADDRESS=0.0.0.0:9464"}

	// Passwd and Group are the image's /etc/passwd and /etc/group: the
	// non-root user and its group, nothing else.
	Passwd = "nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
	Group  = "nonroot:x:65532:\n"
	// LDFlags are the linker flags of the binary (stripped; the version
	// goes after them).
	LDFlags = "-s -w -X main.version="
)

// DefaultCACerts is the CA bundle of Debian-like build machines, the same
// file the Dockerfile copies from its golang build stage.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// Options say what to build.
type Options struct {
	// ModuleRoot is the directory of checkpointd's main Go module.
	ModuleRoot string
	// Version is stamped into the binary (checkpointd version) and the
	// image's labels; empty means "dev".
	Version string
	// Arch is the GOARCH of the binary and the image; empty means the build
	// machine's.
	Arch string
	// CACerts is the PEM bundle to ship; empty means DefaultCACerts.
	CACerts string
	// Created is the image's creation time and every file's modification
	// time; zero means the Unix epoch, which makes the build reproducible.
	Created time.Time
	// Go is the go command; empty means "go".
	Go string
}

func (o *Options) defaults() {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.CACerts == "" {
		o.CACerts = DefaultCACerts
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0)
	}
	if o.Go == "" {
		o.Go = "go"
	}
}

// Build compiles checkpointd as a static Linux binary and puts it in an
// image with the CA certificates and the non-root user.
func Build(ctx context.Context, o Options) (v1.Image, error) {
	o.defaults()
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates for the image: %w (on Debian or Ubuntu: apt-get install ca-certificates)", err)
	}
	dir, err := os.MkdirTemp("", "checkpointd-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "checkpointd")
	if err := BuildBinary(ctx, o, bin); err != nil {
		return nil, err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	return New(binary, certs, o)
}

// BuildBinary runs go build as the Dockerfile's build stage does:
// CGO_ENABLED=0, -trimpath, stripped, version stamped.
func BuildBinary(ctx context.Context, o Options, out string) error {
	o.defaults()
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath",
		"-ldflags", LDFlags+o.Version, "-o", out, "./cmd/checkpointd")
	cmd.Dir = o.ModuleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/checkpointd in %s: %w\n%s", o.ModuleRoot, err, stderr.String())
	}
	return nil
}

// New makes the image from the binary and the CA bundle.
func New(binary, caCerts []byte, o Options) (v1.Image, error) {
	o.defaults()
	layerTar, err := rootfs(o.Created, []file{
		{CACertPath, caCerts, 0o644},
		{PasswdPath, []byte(Passwd), 0o644},
		{GroupPath, []byte(Group), 0o644},
		{BinaryPath, binary, 0o755},
	})
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "checkpointd deployments/image", Comment: "checkpointd, CA certificates, nonroot user"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = o.Arch
	cf.OS = "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		User:         User,
		Entrypoint:   append([]string(nil), Entrypoint...),
		Cmd:          append([]string(nil), Cmd...),
		Env:          append([]string{"PATH=/usr/local/bin"}, Env...),
		ExposedPorts: map[string]struct{}{MetricsPort: {}},
		WorkingDir:   "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "checkpointd",
			"org.opencontainers.image.description": "Kafka consumer-group offset replication, compatible with MirrorMaker 2's MirrorCheckpointConnector",
			"org.opencontainers.image.version":     o.Version,
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cf)
}

type file struct {
	name string // absolute path in the image
	data []byte
	mode int64
}

// rootfs is a layer tarball of the files and their parent directories, all
// owned by root, in a fixed order with one modification time.
func rootfs(mtime time.Time, files []file) ([]byte, error) {
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.name); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
			Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	sorted := append([]file(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, f := range sorted {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.name, "/"),
			Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img to w as one tarball holding an OCI image layout
// (oci-layout, index.json, blobs/sha256/...) and Docker's manifest.json
// pointing at the same blobs, as `docker save` does since Docker 25.
// ref names the image, e.g. "checkpointd:dev".
func WriteTarball(w io.Writer, img v1.Image, ref string) error {
	repo, tag, ok := strings.Cut(ref, ":")
	if !ok || repo == "" || tag == "" || strings.Contains(tag, "/") {
		return fmt.Errorf("image reference %q: want name:tag", ref)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	mtime := time.Unix(0, 0)
	if cf, err := img.ConfigFile(); err == nil && !cf.Created.IsZero() {
		mtime = cf.Created.Time
	}
	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644,
			Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: blob(d), Mode: 0o644, Size: size, ModTime: mtime, Format: tar.FormatPAX})
		if err == nil {
			var n int64
			n, err = io.Copy(tw, rc)
			if err == nil && n != size {
				err = fmt.Errorf("layer %s: wrote %d bytes, want %d", d, n, size)
			}
		}
		rc.Close()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, blob(d))
	}
	if err := put(blob(configDigest), config); err != nil {
		return err
	}
	if err := put(blob(manifestDigest), manifest); err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mt,
			Size:      int64(len(manifest)),
			Digest:    manifestDigest,
			Annotations: map[string]string{
				"org.opencontainers.image.ref.name": tag,
				"io.containerd.image.name":          ref,
			},
		}},
	})
	if err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	docker, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blob(configDigest), RepoTags: []string{ref}, Layers: layerPaths}})
	if err != nil {
		return err
	}
	if err := put("manifest.json", docker); err != nil {
		return err
	}
	return tw.Close()
}

// WriteFile writes the tarball to path, through a temporary file so a failed
// build leaves no half-written image behind.
func WriteFile(path string, img v1.Image, ref string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".checkpointd-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteTarball(f, img, ref); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
