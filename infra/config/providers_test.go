package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const jaasPrefix = `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="`

// providerFiles writes a properties file and a secrets directory as Kafka's file and
// dir providers read them.
func providerFiles(t *testing.T) (propsFile, dir string) {
	t.Helper()
	root := t.TempDir()
	propsFile = filepath.Join(root, "secrets.properties")
	putFile(t, propsFile, "# a comment\nbootstrap = f:9092\npassword=from-file\\u0021\n")
	dir = filepath.Join(root, "secrets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(dir, "password"), "from-dir")
	putFile(t, filepath.Join(dir, "with-newline"), "line\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	return propsFile, dir
}

func putFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

var allProviders = []string{
	"config.providers", "file,env,dir",
	"config.providers.file.class", fileProviderClass,
	"config.providers.env.class", envProviderClass,
	"config.providers.dir.class", dirProviderClass,
}

func TestConfigProvidersResolve(t *testing.T) {
	propsFile, dir := providerFiles(t)
	env := []string{"KAFKA_PASSWORD=from-env", "EMPTY="}
	cases := []struct {
		name, value, want string
	}{
		{"file", "${file:" + propsFile + ":password}", "from-file!"},
		{"dir", "${dir:" + dir + ":password}", "from-dir"},
		{"dir keeps the final newline, as Kafka", "${dir:" + dir + ":with-newline}", "line\n"},
		{"env", "${env:KAFKA_PASSWORD}", "from-env"},
		{"env with an empty path", "${env::KAFKA_PASSWORD}", "from-env"},
		{"set but empty", "x${env:EMPTY}y", "xy"},
		{"inside a JAAS value, twice", jaasPrefix + `${env:KAFKA_PASSWORD}-${dir:` + dir + `:password}";`, jaasPrefix + `from-env-from-dir";`},
		{"one pass only", "${env:NESTED}", "${env:KAFKA_PASSWORD}"},
	}
	env = append(env, "NESTED=${env:KAFKA_PASSWORD}")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			props := with(append(slices.Clone(allProviders), "source.cluster.sasl.jaas.config", tc.value)...)
			cfg, rep, err := FromProperties(props, nil, env)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			for _, w := range rep.Warnings {
				if !strings.Contains(w.Message, "unused: security.protocol") {
					t.Errorf("warning %v", w)
				}
			}
			if got := cfg.Raw["source.cluster.sasl.jaas.config"]; got != tc.want {
				t.Errorf("resolved to %q, want %q", got, tc.want)
			}
			for _, kv := range cfg.Effective() {
				if kv.Key == "source.cluster.sasl.jaas.config" {
					if kv.Value != Redacted || !strings.Contains(kv.Origin, " via ${") {
						t.Errorf("effective %+v: want the value redacted and its references named", kv)
					}
				}
			}
		})
	}
}

// TestConfigProvidersTypedValues: references resolve before validation, so a typed
// key (bootstrap servers, the security protocol) is validated as resolved.
func TestConfigProvidersTypedValues(t *testing.T) {
	propsFile, _ := providerFiles(t)
	props := with(append(slices.Clone(allProviders),
		"source.cluster.bootstrap.servers", "${file:"+propsFile+":bootstrap}",
		"target.cluster.security.protocol", "${env:PROTO}",
	)...)
	cfg, _, err := FromProperties(props, nil, []string{"PROTO=SSL"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Source.BootstrapServers, []string{"f:9092"}) || cfg.Target.Admin["security.protocol"] != "SSL" {
		t.Errorf("servers %v, protocol %q", cfg.Source.BootstrapServers, cfg.Target.Admin["security.protocol"])
	}
	_, rep, err := FromProperties(props, nil, []string{"PROTO=TLS"})
	if err == nil || !slices.ContainsFunc(rep.Problems, func(p Issue) bool {
		return p.Key == "target.cluster.security.protocol" && p.Value == "TLS"
	}) {
		t.Errorf("a provided value that is not valid was not reported under its key: %v", rep.Problems)
	}
}

func TestConfigProvidersErrors(t *testing.T) {
	propsFile, dir := providerFiles(t)
	cases := []struct {
		name  string
		props []string
		key   string // where the problem is reported
		want  string
	}{
		{"undeclared provider", []string{"source.cluster.sasl.jaas.config", "${vault:secret/kafka:password}"},
			"source.cluster.sasl.jaas.config", `config provider "vault", which config.providers does not declare (declared: dir, env, file)`},
		{"no providers at all", []string{"config.providers", "", "source.cluster.sasl.jaas.config", "${file:/x:y}"},
			"source.cluster.sasl.jaas.config", `config provider "file", which config.providers does not declare (none is declared)`},
		{"missing key", []string{"source.cluster.sasl.jaas.config", "${file:" + propsFile + ":nope}"},
			"source.cluster.sasl.jaas.config", `no key "nope" in ` + propsFile},
		{"missing file", []string{"source.cluster.sasl.jaas.config", "${file:" + propsFile + ".gone:password}"},
			"source.cluster.sasl.jaas.config", "cannot read " + propsFile + ".gone: no such file or directory"},
		{"file without path", []string{"source.cluster.sasl.jaas.config", "${file:password}"},
			"source.cluster.sasl.jaas.config", "wants ${file:PATH:KEY}"},
		{"missing dir entry", []string{"source.cluster.sasl.jaas.config", "${dir:" + dir + ":nope}"},
			"source.cluster.sasl.jaas.config", `no file "nope" in ` + dir},
		{"dir entry is a directory", []string{"source.cluster.sasl.jaas.config", "${dir:" + dir + ":sub}"},
			"source.cluster.sasl.jaas.config", "is not a regular file"},
		{"dir escape", []string{"source.cluster.sasl.jaas.config", "${dir:" + dir + ":../secrets.properties}"},
			"source.cluster.sasl.jaas.config", "is not a file name in"},
		{"unset variable", []string{"source.cluster.sasl.jaas.config", "${env:NOT_SET_HERE}"},
			"source.cluster.sasl.jaas.config", "environment variable NOT_SET_HERE is not set"},
		{"env with a path", []string{"source.cluster.sasl.jaas.config", "${env:/x:HOME}"},
			"source.cluster.sasl.jaas.config", "takes no path"},
		{"env allowlist", []string{"config.providers.env.param.allowlist.pattern", "KAFKA_.*", "source.cluster.sasl.jaas.config", "${env:OTHER}"},
			"source.cluster.sasl.jaas.config", "OTHER is not matched by the provider's allowlist.pattern"},
		{"allowed paths", []string{"config.providers.file.param.allowed.paths", "/nowhere", "source.cluster.sasl.jaas.config", "${file:" + propsFile + ":password}"},
			"source.cluster.sasl.jaas.config", "outside the provider's allowed.paths (/nowhere)"},
		{"relative allowed path", []string{"config.providers.dir.param.allowed.paths", "etc"},
			"config.providers.dir.param.allowed.paths", `"etc" is not an absolute path`},
		{"unknown parameter", []string{"config.providers.file.param.nope", "1"},
			"config.providers.file.param.nope", "not a parameter of " + fileProviderClass},
		{"bad allowlist", []string{"config.providers.env.param.allowlist.pattern", "("},
			"config.providers.env.param.allowlist.pattern", "not a regular expression"},
		{"other class", []string{"config.providers.file.class", "io.strimzi.kafka.KubernetesSecretConfigProvider"},
			"config.providers.file.class", "cannot load Java classes"},
		{"no class", []string{"config.providers", "file,env,dir,x"},
			"config.providers.x.class", `required: provider "x" is listed in config.providers`},
		{"reference to a provider that failed", []string{"config.providers.env.class", "", "source.cluster.sasl.jaas.config", "${env:HOME}"},
			"source.cluster.sasl.jaas.config", `config provider "env", which config.providers does not declare`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, rep, err := FromProperties(with(append(slices.Clone(allProviders), tc.props...)...), nil, []string{"HOME=/root", "OTHER=x"})
			if err == nil {
				t.Fatal("accepted")
			}
			found := slices.ContainsFunc(rep.Problems, func(p Issue) bool { return p.Key == tc.key && strings.Contains(p.Message, tc.want) })
			if !found {
				t.Errorf("want a problem for %s saying %q, got %v", tc.key, tc.want, rep.Problems)
			}
			for _, p := range rep.Problems {
				if strings.Contains(p.Message, "placeholder") {
					t.Errorf("reported twice, also as a placeholder: %v", p)
				}
			}
		})
	}
}

func TestConfigProvidersWarnings(t *testing.T) {
	props := with(append(slices.Clone(allProviders), "config.providers.vault.class", "x.Vault")...)
	_, rep, err := FromProperties(props, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Key != "config.providers.vault.class" || !strings.Contains(rep.Warnings[0].Message, "not listed") {
		t.Errorf("want one warning for the undeclared provider's class, got %v", rep.Warnings)
	}
}

// TestConfigProvidersInDriverFile: an mm2.properties declares providers at the top
// level, and cluster settings refer to them.
func TestConfigProvidersInDriverFile(t *testing.T) {
	propsFile, _ := providerFiles(t)
	path := filepath.Join(t.TempDir(), "mm2.properties")
	putFile(t, path, `clusters = A, B
A->B.enabled = true
A.bootstrap.servers = ${file:`+propsFile+`:bootstrap}
B.bootstrap.servers = b:9092
config.providers = file
config.providers.file.class = `+fileProviderClass+`
`)
	cfg, rep, err := Load(path, nil, nil)
	if err != nil {
		t.Fatalf("%v %v", err, rep.Problems)
	}
	if !slices.Equal(cfg.Source.BootstrapServers, []string{"f:9092"}) {
		t.Errorf("source servers %v", cfg.Source.BootstrapServers)
	}
}

func FuzzProviderRefs(f *testing.F) {
	for _, s := range []string{"${file:/a/b.properties:key}", "${env:X}", "${env::X}", "a${dir:/d:f}b${x}c", "${a:b:c:d}", "${:}", "${}", "$${env:X}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		refs := providerRefs(s)
		for _, r := range refs {
			if !strings.Contains(s, r.text) || !strings.HasPrefix(r.text, "${") || !strings.HasSuffix(r.text, "}") {
				t.Fatalf("reference %q not in %q", r.text, s)
			}
			if strings.Contains(r.provider, "}") || strings.Contains(r.provider, ":") || strings.Contains(r.key, "}") {
				t.Fatalf("bad split of %q: %+v", r.text, r)
			}
			if rebuilt := "${" + r.provider + ":" + cond(r.path != "", r.path+":", "") + r.key + "}"; rebuilt != r.text && !strings.HasPrefix(r.text, "${"+r.provider+"::") {
				t.Fatalf("%q split into %+v", r.text, r)
			}
		}
		// Replacing every reference by the same text leaves no reference behind.
		out, err := resolveValue(s, refs, map[string]provider{})
		if len(refs) > 0 && err == nil || len(refs) == 0 && (err != nil || out != s) {
			t.Fatalf("resolveValue(%q) = %q, %v", s, out, err)
		}
	})
}

func cond(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
