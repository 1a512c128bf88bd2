package validate

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ImageFile is a regular file in an image's layers.
type ImageFile struct {
	Mode int64
	UID  int
	Data []byte
}

// ImageFiles reads every layer of img: regular files by absolute path, and
// every path (directories, links) seen.
func ImageFiles(img v1.Image) (files map[string]ImageFile, paths []string, err error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	files = map[string]ImageFile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, nil, err
			}
			p := path.Clean("/" + h.Name)
			paths = append(paths, p)
			if h.Typeflag == tar.TypeReg {
				data, err := io.ReadAll(tr)
				if err != nil {
					rc.Close()
					return nil, nil, err
				}
				files[p] = ImageFile{Mode: h.Mode, UID: h.Uid, Data: data}
			}
		}
		rc.Close()
	}
	return files, paths, nil
}

// shells are programs whose presence would make the image more than the
// binary: the image must work (and be debugged) without them.
var shells = []string{"sh", "bash", "ash", "dash", "zsh", "busybox"}

// CheckImage compares a built image with the Dockerfile's final stage (the
// two builds must make the same image) and checks what the deployment
// relies on: a numeric non-root user, an exec entrypoint that is a static
// executable in the image, no shell, the CA bundle, a passwd entry for the
// user, and a compressed size of at most maxBytes.
func CheckImage(img v1.Image, spec ImageSpec, maxBytes int64) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cf, err := img.ConfigFile()
	if err != nil {
		return []error{err}
	}
	c := cf.Config
	if err := checkUser(c.User); err != nil {
		bad("image user: %v", err)
	}
	if c.User != spec.User {
		bad("image user %q, the Dockerfile says %q", c.User, spec.User)
	}
	if !slices.Equal(c.Entrypoint, spec.Entrypoint) {
		bad("image entrypoint %q, the Dockerfile says %q", c.Entrypoint, spec.Entrypoint)
	}
	if !slices.Equal(c.Cmd, spec.Cmd) {
		bad("image command %q, the Dockerfile says %q", c.Cmd, spec.Cmd)
	}
	for _, e := range spec.Env {
		if !slices.Contains(c.Env, e) {
			bad("image environment %q lacks %s, which the Dockerfile sets", c.Env, e)
		}
	}
	ports := slices.Sorted(maps.Keys(c.ExposedPorts))
	var want []string
	for _, p := range spec.Expose {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		want = append(want, p)
	}
	slices.Sort(want)
	if !slices.Equal(ports, want) {
		bad("image exposes %q, the Dockerfile %q", ports, want)
	}
	if cf.OS != "linux" {
		bad("image OS %q, want linux", cf.OS)
	}

	files, paths, err := ImageFiles(img)
	if err != nil {
		return append(errs, err)
	}
	for _, p := range paths {
		if slices.Contains(shells, path.Base(p)) {
			bad("image holds %s: no shell belongs in it", p)
		}
	}
	got := slices.Sorted(maps.Keys(files))
	wantFiles := slices.Sorted(slices.Values(spec.Files))
	if !slices.Equal(got, wantFiles) {
		bad("image files %q, the Dockerfile copies %q", got, wantFiles)
	}
	if len(c.Entrypoint) > 0 {
		if bin, ok := files[c.Entrypoint[0]]; !ok {
			bad("entrypoint %s is not in the image", c.Entrypoint[0])
		} else {
			if bin.Mode&0o111 == 0 {
				bad("entrypoint %s is not executable (mode %o)", c.Entrypoint[0], bin.Mode)
			}
			if err := checkStatic(bin.Data); err != nil {
				bad("entrypoint %s: %v", c.Entrypoint[0], err)
			}
		}
	}
	if ca, ok := files["/etc/ssl/certs/ca-certificates.crt"]; !ok || !bytes.Contains(ca.Data, []byte("-----BEGIN CERTIFICATE-----")) {
		bad("image has no CA bundle at /etc/ssl/certs/ca-certificates.crt (TLS to the brokers needs it)")
	}
	uid, _, _ := strings.Cut(c.User, ":")
	if pw, ok := files["/etc/passwd"]; !ok || !hasUID(string(pw.Data), uid) {
		bad("image's /etc/passwd has no entry for uid %s", uid)
	}
	var size int64
	layers, err := img.Layers()
	if err != nil {
		return append(errs, err)
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return append(errs, err)
		}
		size += n
	}
	if size > maxBytes {
		bad("image layers are %d bytes compressed, more than the %d allowed", size, maxBytes)
	}
	return errs
}

func hasUID(passwd, uid string) bool {
	for line := range strings.SplitSeq(passwd, "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 4 && f[2] == uid {
			return true
		}
	}
	return false
}

// checkStatic wants a Linux ELF executable with no program interpreter and
// no shared libraries: it runs on an empty base.
func checkStatic(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (has a program interpreter); build with CGO_ENABLED=0")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v", libs)
	}
	return nil
}
