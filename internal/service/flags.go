package service

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/checkpointd/checkpointd/infra/config"
)

// ConfigFlags are the flags every command that reads a config shares.
type ConfigFlags struct {
	Path string   // --config
	Sets Repeated // --set key=value
}

// Register adds --config and --set to fs.
func (c *ConfigFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Path, "config", "", "configuration file (YAML, JSON or .properties) with MM2 property names")
	fs.Var(&c.Sets, "set", "override one property, key=value (repeatable)")
}

// Load reads the config of one flow, prints its warnings, and fails on any
// problem.
func (c *ConfigFlags) Load(stderr io.Writer) (*config.Config, error) {
	if c.Path == "" {
		return nil, fmt.Errorf("--config is required")
	}
	cfg, report, err := config.Load(c.Path, c.Sets, os.Environ())
	printWarnings(stderr, report)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadFlows reads the config of every flow (one, or each enabled flow of an
// MM2 driver file), prints its warnings, and fails on any problem.
func (c *ConfigFlags) LoadFlows(stderr io.Writer) ([]*config.Config, error) {
	if c.Path == "" {
		return nil, fmt.Errorf("--config is required")
	}
	cfgs, report, err := config.LoadFlows(c.Path, c.Sets, os.Environ())
	printWarnings(stderr, report)
	if err != nil {
		return nil, err
	}
	return cfgs, nil
}

// printWarnings prints the config's warnings, one a line.
func printWarnings(w io.Writer, report *config.Report) {
	if report == nil {
		return
	}
	for _, issue := range report.Warnings {
		fmt.Fprintln(w, "warning:", issue)
	}
}

// Repeated collects a flag given several times.
type Repeated []string

func (r *Repeated) String() string     { return fmt.Sprint(*r) }
func (r *Repeated) Set(v string) error { *r = append(*r, v); return nil }
