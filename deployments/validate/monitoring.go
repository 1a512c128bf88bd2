package validate

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// externalMetrics are the series the alerts may read that checkpointd does
// not export: Prometheus' own and kube-state-metrics'.
var externalMetrics = []string{"up", "kube_deployment_status_replicas_unavailable"}

// CheckpointdMetrics are the metric families checkpointd exports, by name
// and type: a fresh infra/metrics registry with every series moved once (a
// vector without children is not gathered) and the pipeline's gauges.
func CheckpointdMetrics() (map[string]dto.MetricType, error) {
	m := metrics.New(metrics.Config{Source: "s", Target: "t", GroupLabels: true, Registry: prometheus.NewRegistry()})
	tp := messages.TopicPartition{Topic: "s.t", Partition: 0}
	m.CheckpointEmitted(context.Background(), messages.Checkpoint{Group: "g", TopicPartition: tp}, time.Now())
	m.CheckpointSkipped(context.Background(), "g", tp, 0, messages.SkipNoSyncYet)
	m.RecordMalformed("t", 0, 0, nil)
	m.TargetResult(context.Background(), "g", tp, targetgroup.Committed, time.Now(), time.Now())
	m.ReaderRecord("t", 0, 1, 2)
	for _, name := range metrics.PipelineGauges {
		if strings.HasSuffix(name, "_total") {
			m.CounterFunc(name, name, func() float64 { return 1 })
		} else {
			m.GaugeFunc(name, name, func() float64 { return 1 })
		}
	}
	families, err := m.Registry().Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]dto.MetricType{}
	for _, f := range families {
		out[f.GetName()] = f.GetType()
	}
	return out, nil
}

func exported(known map[string]dto.MetricType, name string) bool {
	if _, ok := known[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && known[base] == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// commitReasons are the reason label values of checkpointd_target_commits_total.
func commitReasons() []string {
	var out []string
	for _, r := range targetgroup.Reasons() {
		out = append(out, string(r))
	}
	return out
}

// CheckRules parses every alert expression with Prometheus' PromQL parser
// and checks the series it selects: checkpointd metrics that exist,
// histogram_quantile over _bucket series, reason values the commit stage
// uses; and that every alert has a severity, a summary and a duration.
func CheckRules(rules []RuleExpr) []error {
	var errs []error
	bad := func(r RuleExpr, format string, args ...any) {
		errs = append(errs, fmt.Errorf("alert %s: "+format, append([]any{r.Alert}, args...)...))
	}
	known, err := CheckpointdMetrics()
	if err != nil {
		return []error{err}
	}
	reasons := commitReasons()
	for _, r := range rules {
		if r.Alert == "" {
			errs = append(errs, fmt.Errorf("rule %q: only alerting rules are expected", r.Expr))
			continue
		}
		if r.Severity == "" || r.Summary == "" || r.For == "" {
			bad(r, "needs a severity label, a summary annotation and a for duration")
		}
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
		if err != nil {
			bad(r, "PromQL: %v", err)
			continue
		}
		readsCheckpointd := false
		for _, sel := range parser.ExtractSelectors(expr) {
			var name string
			for _, m := range sel {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			switch {
			case name == "":
				bad(r, "a selector without a metric name: %v", sel)
			case strings.HasPrefix(name, metrics.Namespace+"_"):
				readsCheckpointd = true
				if !exported(known, name) {
					bad(r, "reads %s, which checkpointd does not export", name)
				}
			case !slices.Contains(externalMetrics, name):
				bad(r, "reads %s, neither checkpointd's nor a known external metric", name)
			}
			for _, m := range sel {
				if m.Name != "reason" {
					continue
				}
				if err := checkReasonMatcher(m, reasons); err != nil {
					bad(r, "%v", err)
				}
			}
		}
		if !readsCheckpointd && !slices.ContainsFunc(externalMetrics, func(n string) bool { return strings.Contains(r.Expr, n) }) {
			bad(r, "reads no metric")
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if b, ok := n.(*parser.BinaryExpr); ok {
				if err := checkMatching(b); err != nil {
					bad(r, "%v", err)
				}
			}
			call, ok := n.(*parser.Call)
			if !ok || call.Func.Name != "histogram_quantile" {
				return nil
			}
			for _, sel := range parser.ExtractSelectors(call.Args[1]) {
				for _, m := range sel {
					if m.Name == labels.MetricName && !strings.HasSuffix(m.Value, "_bucket") {
						bad(r, "histogram_quantile over %s, want a _bucket series", m.Value)
					}
				}
			}
			return nil
		})
	}
	return errs
}

// checkReasonMatcher wants every value a reason matcher names to be one the
// commit stage reports.
func checkReasonMatcher(m *labels.Matcher, reasons []string) error {
	var values []string
	switch m.Type {
	case labels.MatchEqual, labels.MatchNotEqual:
		values = []string{m.Value}
	default:
		for _, v := range strings.Split(m.Value, "|") {
			if !regexp.MustCompile(`^[a-z_]+$`).MatchString(v) {
				return fmt.Errorf("reason matcher %s: list the reasons literally", m)
			}
			values = append(values, v)
		}
	}
	for _, v := range values {
		if !slices.Contains(reasons, v) {
			return fmt.Errorf("reason %q is not one checkpointd reports (%v)", v, reasons)
		}
	}
	return nil
}

// RuleExpr is one rule of a PrometheusRule.
type RuleExpr struct {
	Alert, Expr, For, Severity, Summary string
}

func checkMonitoring(m *Manifests) []error {
	var rules []RuleExpr
	for _, pr := range m.Rules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				re := RuleExpr{Alert: r.Alert, Expr: r.Expr.String(), Severity: r.Labels["severity"], Summary: r.Annotations["summary"]}
				if r.For != nil {
					re.For = string(*r.For)
				}
				rules = append(rules, re)
			}
		}
	}
	if len(m.Rules) != 1 || len(rules) == 0 {
		return []error{fmt.Errorf("want one PrometheusRule with alerts, got %d with %d rules", len(m.Rules), len(rules))}
	}
	errs := CheckRules(rules)
	// The alerts: not ready, reader lag growing, commits failing by reason.
	for _, want := range []struct{ what, metric, by string }{
		{"not ready", "kube_deployment_status_replicas_unavailable", ""},
		{"reader lag", "checkpointd_reader_lag_records", "deriv("},
		{"commits failing by reason", "checkpointd_target_commits_total", "reason"},
	} {
		if !slices.ContainsFunc(rules, func(r RuleExpr) bool {
			return strings.Contains(r.Expr, want.metric) && strings.Contains(r.Expr, want.by)
		}) {
			errs = append(errs, fmt.Errorf("no alert for %s (over %s)", want.what, want.metric))
		}
	}
	return errs
}

var jobMatcher = regexp.MustCompile(`\bjob\s*=~?\s*"([^"]*)"`)

// checkRuleJobs wants the alerts' job matchers to name the job the
// ServiceMonitor gives the series.
func checkRuleJobs(m *Manifests, job string) []error {
	var errs []error
	for _, pr := range m.Rules {
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				for _, mt := range jobMatcher.FindAllStringSubmatch(r.Expr.String(), -1) {
					if mt[1] != job {
						errs = append(errs, fmt.Errorf("alert %s selects job=%q; the ServiceMonitor's series have job=%q", r.Alert, mt[1], job))
					}
				}
			}
		}
	}
	return errs
}

// checkMatching catches a binary operation between two vectors whose label
// sets are known to differ, matched on all labels (no on or ignoring): no
// element ever matches, so "a unless b" is always a and "a and b" is empty.
func checkMatching(b *parser.BinaryExpr) error {
	if b.LHS.Type() != parser.ValueTypeVector || b.RHS.Type() != parser.ValueTypeVector {
		return nil
	}
	if vm := b.VectorMatching; vm != nil && (vm.On || len(vm.MatchingLabels) > 0) {
		return nil
	}
	l, lok := outLabels(b.LHS)
	r, rok := outLabels(b.RHS)
	if lok && rok && !slices.Equal(l, r) {
		return fmt.Errorf("%s between series labelled %v and %v matches nothing; say on(...)", b.Op, l, r)
	}
	return nil
}

// outLabels is the label set of the vector expr gives, where the
// expression fixes it (an aggregation by labels, a comparison with a
// number, histogram_quantile over one).
func outLabels(e parser.Expr) ([]string, bool) {
	switch e := e.(type) {
	case *parser.ParenExpr:
		return outLabels(e.Expr)
	case *parser.AggregateExpr:
		switch e.Op {
		case parser.SUM, parser.AVG, parser.MIN, parser.MAX, parser.COUNT, parser.GROUP, parser.STDDEV, parser.STDVAR, parser.QUANTILE:
			if e.Without {
				return nil, false
			}
			return slices.Sorted(slices.Values(e.Grouping)), true
		}
	case *parser.BinaryExpr:
		switch {
		case e.LHS.Type() == parser.ValueTypeVector && e.RHS.Type() == parser.ValueTypeScalar:
			return outLabels(e.LHS)
		case e.LHS.Type() == parser.ValueTypeScalar && e.RHS.Type() == parser.ValueTypeVector:
			return outLabels(e.RHS)
		}
	case *parser.Call:
		if e.Func.Name == "histogram_quantile" && len(e.Args) == 2 {
			l, ok := outLabels(e.Args[1])
			return slices.DeleteFunc(l, func(s string) bool { return s == "le" }), ok
		}
	}
	return nil, false
}
