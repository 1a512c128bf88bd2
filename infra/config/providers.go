package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Kafka's config providers (KIP-297, KIP-632, KIP-887), as a worker or an MM2 driver
// declares them:
//
//	config.providers=file,env,dir
//	config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
//	config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
//	config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
//
// and any value may then hold references such as ${file:/etc/kafka/secrets.properties:password},
// ${dir:/var/run/secrets/kafka:password} or ${env:KAFKA_PASSWORD}. checkpointd runs the three
// providers Kafka ships; other classes cannot be loaded.
const (
	providersKey        = "config.providers"
	fileProviderClass   = "org.apache.kafka.common.config.provider.FileConfigProvider"
	envProviderClass    = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
	dirProviderClass    = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
	allowedPathsParam   = "allowed.paths"     // FileConfigProvider, DirectoryConfigProvider (KIP-993)
	allowlistParam      = "allowlist.pattern" // EnvVarConfigProvider
	providerParamPrefix = ".param."
)

// providerRefPattern is the reference syntax of Kafka's ConfigTransformer:
// ${provider:[path:]key}, the shortest match for each part, no nesting.
var providerRefPattern = regexp.MustCompile(`\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}`)

// providerRef is one ${provider:[path:]key} reference in a value.
type providerRef struct {
	text, provider, path, key string
}

// providerRefs returns the references in a value, in order.
func providerRefs(value string) []providerRef {
	var out []providerRef
	for _, m := range providerRefPattern.FindAllStringSubmatch(value, -1) {
		out = append(out, providerRef{text: m[0], provider: m[1], path: m[2], key: m[3]})
	}
	return out
}

// provider looks up the value of one reference.
type provider interface {
	get(path, key string) (string, error)
}

// resolved remembers which keys took (part of) their value from a provider, and from
// which references, for the effective configuration.
type resolved map[string][]string

// resolveProviders replaces every config provider reference in s with the value its
// provider gives, before anything is validated. A reference to a provider that
// config.providers does not declare, a provider that cannot be built, or a value that
// cannot be found is a problem naming the key; such keys are returned in bad so that
// they are not reported again. env is the environment the env provider reads.
func resolveProviders(s settings, env []string, rep *Report) (res resolved, bad map[string]bool) {
	res, bad = resolved{}, map[string]bool{}
	providers := declaredProviders(s, env, rep)
	for _, key := range s.sortedKeys() {
		if isProviderKey(key) {
			continue
		}
		v := s[key]
		refs := providerRefs(v.value)
		if len(refs) == 0 {
			continue
		}
		value, err := resolveValue(v.value, refs, providers)
		if err != nil {
			rep.problem(key, "", "%v", err)
			bad[key] = true
			continue
		}
		for _, r := range refs {
			res[key] = append(res[key], r.text)
		}
		s[key] = setting{value: value, origin: v.origin}
	}
	return res, bad
}

// resolveValue replaces each reference in value. Like Kafka's ConfigTransformer it
// makes one pass: a provided value that itself looks like a reference stays as it is.
func resolveValue(value string, refs []providerRef, providers map[string]provider) (string, error) {
	got := map[string]string{}
	for _, r := range refs {
		p, ok := providers[r.provider]
		if !ok {
			return "", fmt.Errorf("%s refers to config provider %q, which %s does not declare (%s)", r.text, r.provider, providersKey, declaredList(providers))
		}
		v, err := p.get(r.path, r.key)
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.text, err)
		}
		got[r.text] = v
	}
	return providerRefPattern.ReplaceAllStringFunc(value, func(ref string) string { return got[ref] }), nil
}

func declaredList(providers map[string]provider) string {
	if len(providers) == 0 {
		return "none is declared"
	}
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return "declared: " + strings.Join(names, ", ")
}

func isProviderKey(key string) bool {
	return key == providersKey || strings.HasPrefix(key, providersKey+".")
}

// declaredProviders builds the providers config.providers names. Problems (no class,
// a class checkpointd cannot run, bad parameters) are reported under their keys and
// leave the provider out, so references to it fail too. Keys of undeclared providers
// and unknown parameters are warnings.
func declaredProviders(s settings, env []string, rep *Report) map[string]provider {
	out := map[string]provider{}
	declared := map[string]bool{}
	for _, alias := range parseList(s[providersKey].value) {
		if alias == "" {
			continue
		}
		declared[alias] = true
		p, err := newProvider(s, alias, env)
		if err != nil {
			var ce *clientError
			if errors.As(err, &ce) {
				rep.problem(ce.key, ce.value, "%s", ce.msg)
			} else {
				rep.problem(providersKey, s[providersKey].value, "%v", err)
			}
			continue
		}
		out[alias] = p
	}
	for _, key := range s.sortedKeys() {
		rest, ok := strings.CutPrefix(key, providersKey+".")
		if !ok {
			continue
		}
		alias, _, _ := strings.Cut(rest, ".")
		if !declared[alias] {
			rep.warn(key, "", "ignored: provider %q is not listed in %s", alias, providersKey)
		}
	}
	return out
}

// newProvider builds the provider declared as alias from its class and parameters.
func newProvider(s settings, alias string, env []string) (provider, error) {
	prefix := providersKey + "." + alias
	classKey := prefix + ".class"
	class := strings.TrimSpace(s[classKey].value)
	params := map[string]string{}
	for _, key := range s.sortedKeys() {
		if name, ok := strings.CutPrefix(key, prefix+providerParamPrefix); ok {
			params[name] = s[key].value
		}
	}
	bad := func(name, format string, args ...any) error {
		key := prefix + providerParamPrefix + name
		if name == "" {
			key = classKey
		}
		return &clientError{key: key, value: s[key].value, msg: fmt.Sprintf(format, args...)}
	}
	allowedParam := func(known string) error {
		for name := range params {
			if name != known {
				return bad(name, "not a parameter of %s (it takes %s)", class, known)
			}
		}
		return nil
	}
	switch class {
	case fileProviderClass, dirProviderClass:
		if err := allowedParam(allowedPathsParam); err != nil {
			return nil, err
		}
		allowed, err := parseAllowedPaths(params[allowedPathsParam])
		if err != nil {
			return nil, bad(allowedPathsParam, "%v", err)
		}
		if class == fileProviderClass {
			return fileProvider{allowed: allowed}, nil
		}
		return dirProvider{allowed: allowed}, nil
	case envProviderClass:
		if err := allowedParam(allowlistParam); err != nil {
			return nil, err
		}
		pattern := cmp.Or(params[allowlistParam], ".*")
		re, err := regexp.Compile(`^(?:` + pattern + `)$`)
		if err != nil {
			return nil, bad(allowlistParam, "not a regular expression: %v", err)
		}
		return envProvider{env: envMap(env), allow: re}, nil
	case "":
		return nil, &clientError{key: classKey, msg: fmt.Sprintf("required: provider %q is listed in %s; want %s, %s or %s", alias, providersKey, fileProviderClass, envProviderClass, dirProviderClass)}
	default:
		return nil, bad("", "checkpointd cannot load Java classes: want %s, %s or %s", fileProviderClass, envProviderClass, dirProviderClass)
	}
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// parseAllowedPaths reads allowed.paths: absolute paths, comma-separated; empty allows
// every path, as in Kafka.
func parseAllowedPaths(v string) ([]string, error) {
	var out []string
	for _, p := range parseList(v) {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%q is not an absolute path", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// checkAllowed refuses a path outside allowed.paths, as Kafka's AllowedPaths does.
func checkAllowed(allowed []string, path string) error {
	if len(allowed) == 0 {
		return nil
	}
	clean := filepath.Clean(path)
	for _, a := range allowed {
		if clean == a || strings.HasPrefix(clean, strings.TrimSuffix(a, string(filepath.Separator))+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("path %s is outside the provider's %s (%s)", path, allowedPathsParam, strings.Join(allowed, ", "))
}

// fileProvider is Kafka's FileConfigProvider: ${file:PATH:KEY} is KEY of the Java
// properties file at PATH.
type fileProvider struct{ allowed []string }

func (f fileProvider) get(path, key string) (string, error) {
	if path == "" {
		return "", errors.New("the file provider wants ${file:PATH:KEY}")
	}
	if err := checkAllowed(f.allowed, path); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	props, err := parseProperties(data)
	if err != nil {
		return "", fmt.Errorf("%s is not a properties file: %w", path, err)
	}
	v, ok := props[key]
	if !ok {
		return "", fmt.Errorf("no key %q in %s", key, path)
	}
	return v, nil
}

// dirProvider is Kafka's DirectoryConfigProvider: ${dir:DIR:NAME} is the content of
// the regular file NAME in DIR, as it is (a final newline is kept, as in Kafka).
type dirProvider struct{ allowed []string }

func (d dirProvider) get(dir, name string) (string, error) {
	if dir == "" {
		return "", errors.New("the directory provider wants ${dir:DIRECTORY:FILE}")
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("%q is not a file name in %s", name, dir)
	}
	if err := checkAllowed(d.allowed, dir); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("no file %q in %s: %w", name, dir, unwrapPathError(err))
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	return string(data), nil
}

// envProvider is Kafka's EnvVarConfigProvider: ${env:NAME} is the environment
// variable NAME, if allowlist.pattern matches its name. It takes no path.
type envProvider struct {
	env   map[string]string
	allow *regexp.Regexp
}

func (e envProvider) get(path, name string) (string, error) {
	if path != "" {
		return "", errors.New("the environment provider takes no path: want ${env:NAME}")
	}
	if !e.allow.MatchString(name) {
		return "", fmt.Errorf("environment variable %s is not matched by the provider's %s", name, allowlistParam)
	}
	v, ok := e.env[name]
	if !ok {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return v, nil
}

// unwrapPathError drops the path from an *fs.PathError, which the message names already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
