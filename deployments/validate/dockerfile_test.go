package validate

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/deployments/image"
)

const dockerfilePath = "../Dockerfile"

func TestDockerfile(t *testing.T) {
	d, err := ParseDockerfile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(CheckDockerfile(d)...); err != nil {
		t.Fatal(err)
	}
	// make image builds the same image: same settings, same files.
	s := d.Spec()
	want := ImageSpec{
		Base: "scratch", User: image.User, Entrypoint: image.Entrypoint, Cmd: image.Cmd,
		Env: image.Env, Expose: []string{image.MetricsPort},
		Files: []string{image.CACertPath, image.PasswdPath, image.GroupPath, image.BinaryPath},
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"user", []string{s.User}, []string{want.User}},
		{"base", []string{s.Base}, []string{want.Base}},
		{"entrypoint", s.Entrypoint, want.Entrypoint},
		{"cmd", s.Cmd, want.Cmd},
		{"env", s.Env, want.Env},
		{"expose", s.Expose, want.Expose},
		{"files", slices.Sorted(slices.Values(s.Files)), slices.Sorted(slices.Values(want.Files))},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("Dockerfile %s %q, deployments/image builds %q", c.what, c.got, c.want)
		}
	}
	// The build stage makes the same binary and files as deployments/image.
	raw, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`go build -trimpath -ldflags "` + image.LDFlags + `${VERSION}"`,
		"echo '" + strings.TrimSuffix(image.Passwd, "\n") + "' > /out/etc/passwd",
		"echo '" + strings.TrimSuffix(image.Group, "\n") + "' > /out/etc/group",
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the Dockerfile's build stage does not run %s, as deployments/image builds", want)
		}
	}
	// The build stage's Go is the one go.mod asks for.
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("no go line in go.mod")
	}
	if base := d.Stages[0].BaseName; base != "golang:"+string(goVersion[1]) {
		t.Errorf("build stage FROM %s; go.mod wants Go %s", base, goVersion[1])
	}
	if _, err := os.Stat(dockerfilePath + ".dockerignore"); err != nil {
		t.Errorf("no ignore file beside the Dockerfile: the whole repository (bin/, .git) would be sent as context: %v", err)
	}
}

// TestBrokenDockerfileFails plants one fault at a time in a copy of the
// Dockerfile.
func TestBrokenDockerfileFails(t *testing.T) {
	raw, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"root user", "USER 65532:65532", "USER 0:0", `"0:0" is root`},
		{"named user", "USER 65532:65532", "USER nonroot", "want a numeric uid"},
		{"no user", "USER 65532:65532\n", "", "the image would run as root"},
		{"one stage", "FROM scratch\nCOPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\nCOPY --from=build /out/etc/passwd /etc/passwd\nCOPY --from=build /out/etc/group /etc/group\nCOPY --from=build /out/checkpointd /usr/local/bin/checkpointd\n", "", "want a multi-stage build"},
		{"base with a shell", "FROM scratch", "FROM debian:13-slim", `starts FROM "debian:13-slim", want scratch`},
		{"shell in the final stage", "USER 65532:65532", "RUN chmod 0755 /usr/local/bin/checkpointd\nUSER 65532:65532", "it has no shell"},
		{"shell-form entrypoint", `ENTRYPOINT ["/usr/local/bin/checkpointd"]`, "ENTRYPOINT /usr/local/bin/checkpointd", "ENTRYPOINT in shell form needs /bin/sh"},
		{"cgo", "CGO_ENABLED=0 GOOS=linux", "GOOS=linux", "CGO_ENABLED=0"},
		{"lint: casing", "FROM golang:1.26 AS build", "FROM golang:1.26 as build", "FromAsCasing"},
		{"unknown instruction", "EXPOSE 9464/tcp", "EXPOS 9464/tcp", "unknown instruction"},
		{"entrypoint not copied", `ENTRYPOINT ["/usr/local/bin/checkpointd"]`, `ENTRYPOINT ["/checkpointd"]`, "is not a file the final stage copies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Count(string(raw), tc.old) != 1 {
				t.Fatalf("Dockerfile holds %q %d times", tc.old, strings.Count(string(raw), tc.old))
			}
			file := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(file, []byte(strings.Replace(string(raw), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := ParseDockerfile(file)
			if err == nil {
				err = errors.Join(CheckDockerfile(d)...)
			}
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
