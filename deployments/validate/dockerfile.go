// Package validate checks checkpointd's deployment artifacts the way the
// tools that consume them read them: the Kubernetes manifests through a
// kustomize build and a strict decode into the API types, the compose file
// through the compose-spec loader, the Dockerfile through BuildKit's parser,
// and the configuration in each through checkpointd's own config parser.
package validate

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Dockerfile is a parsed Dockerfile: its stages, typed.
type Dockerfile struct {
	Stages []instructions.Stage
}

// Final is the last stage, the image.
func (d *Dockerfile) Final() *instructions.Stage { return &d.Stages[len(d.Stages)-1] }

// ParseDockerfile parses a Dockerfile with BuildKit's parser into typed
// instructions. A syntax error, an unknown instruction or a BuildKit lint
// warning (e.g. FromAsCasing, JSONArgsRecommended) is an error.
func ParseDockerfile(file string) (*Dockerfile, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parseDockerfile(file, raw)
}

func parseDockerfile(name string, raw []byte) (*Dockerfile, error) {
	res, err := parser.Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var lints []string
	for _, w := range res.Warnings {
		lints = append(lints, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		lints = append(lints, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(lints) > 0 {
		return nil, fmt.Errorf("%s: %s", name, strings.Join(lints, "; "))
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return &Dockerfile{Stages: stages}, nil
}

// ImageSpec is what the Dockerfile's final stage makes of the image.
type ImageSpec struct {
	Base       string
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=VALUE
	Expose     []string
	Files      []string // absolute paths the stage copies in
}

// Spec reads the final stage's image settings.
func (d *Dockerfile) Spec() ImageSpec {
	st := d.Final()
	s := ImageSpec{Base: st.BaseName}
	for _, c := range st.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			s.User = c.User
		case *instructions.EntrypointCommand:
			s.Entrypoint = c.CmdLine
			if c.PrependShell {
				s.Entrypoint = append([]string{"/bin/sh", "-c"}, c.CmdLine...)
			}
		case *instructions.CmdCommand:
			s.Cmd = c.CmdLine
			if c.PrependShell {
				s.Cmd = append([]string{"/bin/sh", "-c"}, c.CmdLine...)
			}
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				s.Env = append(s.Env, kv.Key+"="+kv.Value)
			}
		case *instructions.ExposeCommand:
			s.Expose = append(s.Expose, c.Ports...)
		case *instructions.CopyCommand:
			for _, src := range c.SourcePaths {
				dst := c.DestPath
				if strings.HasSuffix(dst, "/") {
					dst += path.Base(src)
				}
				s.Files = append(s.Files, dst)
			}
		}
	}
	return s
}

// CheckDockerfile checks what the deployment relies on: a multi-stage build
// whose final stage starts from an empty base, copies the static binary
// built with CGO_ENABLED=0, runs as a numeric non-root user, runs nothing
// (no shell there) and has an exec-form entrypoint.
func CheckDockerfile(d *Dockerfile) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(d.Stages) < 2 {
		bad("want a multi-stage build (build stage, then the image), got %d stage(s)", len(d.Stages))
		return errs
	}
	final := d.Final()
	spec := d.Spec()
	if spec.Base != "scratch" {
		bad("final stage starts FROM %q, want scratch (nothing but the binary, certificates and the user)", spec.Base)
	}
	staticBuild := false
	for _, st := range d.Stages[:len(d.Stages)-1] {
		for _, c := range st.Commands {
			if r, ok := c.(*instructions.RunCommand); ok {
				line := strings.Join(r.CmdLine, " ")
				if strings.Contains(line, "go build") && strings.Contains(line, "CGO_ENABLED=0") {
					staticBuild = true
				}
			}
		}
	}
	if !staticBuild {
		bad("no build stage runs go build with CGO_ENABLED=0 (a static binary is needed on scratch)")
	}
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.RunCommand:
			bad("final stage runs %q: it has no shell", strings.Join(c.CmdLine, " "))
		case *instructions.CopyCommand:
			if c.From == "" {
				bad("final stage copies %v from the build context; copy from the build stage", c.SourcePaths)
			}
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				bad("ENTRYPOINT in shell form needs /bin/sh; use the exec (JSON) form")
			}
		case *instructions.CmdCommand:
			if c.PrependShell {
				bad("CMD in shell form needs /bin/sh; use the exec (JSON) form")
			}
		}
	}
	if err := checkUser(spec.User); err != nil {
		bad("USER: %v", err)
	}
	if len(spec.Entrypoint) == 0 {
		bad("final stage has no ENTRYPOINT")
	} else if !slices.Contains(spec.Files, spec.Entrypoint[0]) {
		bad("ENTRYPOINT %s is not a file the final stage copies (%v)", spec.Entrypoint[0], spec.Files)
	}
	return errs
}

// checkUser wants uid[:gid], numeric (a name needs /etc/passwd lookups the
// kubelet cannot do for runAsNonRoot) and not root.
func checkUser(u string) error {
	if u == "" {
		return fmt.Errorf("not set: the image would run as root")
	}
	uid, gid, hasGID := strings.Cut(u, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return fmt.Errorf("%q: want a numeric uid[:gid], so runAsNonRoot can be checked", u)
		}
		if n == 0 {
			return fmt.Errorf("%q is root", u)
		}
	}
	return nil
}
