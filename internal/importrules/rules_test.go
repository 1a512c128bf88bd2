package importrules

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/checkpointd/checkpointd"

// TestModuleKeepsItsLayers is the check itself, over this module.
func TestModuleKeepsItsLayers(t *testing.T) {
	pkgs, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 || !hasPackage(pkgs, "cmd/checkpointd") || !hasPackage(pkgs, "handlers") {
		t.Fatalf("read %d packages, not the module's (cmd/checkpointd and handlers missing?)", len(pkgs))
	}
	for _, v := range Check(module, pkgs, Rules, Binaries) {
		t.Error(v)
	}
}

// TestServiceBinaryLinks asks the go tool what cmd/checkpointd links, third-party
// packages included: no test bed, demo or embedded cluster, whoever imports it.
func TestServiceBinaryLinks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/checkpointd").Output()
	if err != nil {
		t.Fatalf("go list -deps of cmd/checkpointd: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/IBM/sarama") {
		t.Fatalf("go list -deps gave %d packages without sarama: not the service's", len(deps))
	}
	for _, d := range deps {
		for _, b := range Binaries {
			for _, f := range b.Forbidden {
				if d == f || strings.HasPrefix(d, f+"/") || strings.HasPrefix(d, module+"/"+f) {
					t.Errorf("cmd/checkpointd links %s", d)
				}
			}
		}
	}
}

func hasPackage(pkgs []Package, p string) bool {
	for _, pkg := range pkgs {
		if pkg.Path == p {
			return true
		}
	}
	return false
}

// TestCheckFindsPlantedViolations plants each kind of violation in a small
// module and expects exactly it to be found.
func TestCheckFindsPlantedViolations(t *testing.T) {
	m := func(rel ...string) []string {
		out := make([]string, len(rel))
		for i, r := range rel {
			out[i] = module + "/" + r
		}
		return out
	}
	clean := []Package{
		{Path: "messages", Imports: []string{"time"}},
		{Path: "messages/targetgroup", Imports: m("messages")},
		{Path: "handlers", Imports: m("messages", "messages/targetgroup", "internal/javaregex"), TestImports: m("messages")},
		{Path: "infra/targetgroups", Imports: m("messages/targetgroup"), TestImports: m("internal/testbed/kafkatest")},
		{Path: "pipeline", Imports: m("handlers", "infra/targetgroups"), TestImports: m("internal/testbed/kafkatest")},
		{Path: "cmd/checkpointd", Imports: append(m("pipeline"), "github.com/IBM/sarama")},
		{Path: "cmd/checkpointd-demo", Imports: m("internal/demo")},
		{Path: "internal/demo", Imports: append(m("pipeline"), "github.com/twmb/franz-go/pkg/kfake")},
		{Path: "internal/testbed/kafkatest", Imports: m("messages")},
	}
	if v := Check(module, clean, Rules, Binaries); len(v) != 0 {
		t.Fatalf("clean module: %v", v)
	}
	for _, tt := range []struct {
		name  string
		plant func([]Package) []Package
		want  string
	}{
		{"adapter imports the core", func(p []Package) []Package {
			return add(p, "infra/targetgroups", module+"/handlers", false)
		}, "infra/targetgroups imports handlers: adapters"},
		{"core test imports an adapter", func(p []Package) []Package {
			return add(p, "handlers", module+"/infra/targetgroups", true)
		}, "handlers imports infra/targetgroups (in a test): the core"},
		{"messages test imports a test bed", func(p []Package) []Package {
			return add(p, "messages", module+"/internal/testbed/kafkatest", true)
		}, "messages imports internal/testbed/kafkatest (in a test): messages"},
		{"production code imports a test bed", func(p []Package) []Package {
			return add(p, "pipeline", module+"/internal/testbed/kafkatest", false)
		}, "pipeline imports internal/testbed/kafkatest: production code"},
		{"the service links kfake through a package it imports", func(p []Package) []Package {
			return add(p, "infra/targetgroups", "github.com/twmb/franz-go/pkg/kfake", false)
		}, "infra/targetgroups imports github.com/twmb/franz-go/pkg/kfake: cmd/checkpointd links no"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A planted import may break more than one rule; each
			// violation must be the planted one, and one must be the rule
			// the case is about.
			v := Check(module, tt.plant(clone(clean)), Rules, Binaries)
			found := false
			for _, x := range v {
				found = found || strings.HasPrefix(x.String(), tt.want)
				if !strings.HasPrefix(tt.want, x.From+" imports "+x.Import) {
					t.Errorf("violation %v was not planted", x)
				}
			}
			if !found {
				t.Errorf("violations %v, want one starting %q", v, tt.want)
			}
		})
	}
}

func clone(pkgs []Package) []Package {
	out := make([]Package, len(pkgs))
	for i, p := range pkgs {
		out[i] = Package{Path: p.Path, Imports: append([]string(nil), p.Imports...), TestImports: append([]string(nil), p.TestImports...)}
	}
	return out
}

func add(pkgs []Package, path, imp string, test bool) []Package {
	for i := range pkgs {
		if pkgs[i].Path == path {
			if test {
				pkgs[i].TestImports = append(pkgs[i].TestImports, imp)
			} else {
				pkgs[i].Imports = append(pkgs[i].Imports, imp)
			}
		}
	}
	return pkgs
}
