package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/pipeline"
)

func TestShadowReportCommand(t *testing.T) {
	ahead := 2.5
	agree := []pipeline.ShadowReport{{Flow: "a->b", Counts: shadow.Counts{ByStatus: map[shadow.Status]int{shadow.Equal: 1, shadow.Ahead: 1}},
		Withheld: map[string]int64{"checkpoint": 7},
		Rows: []shadow.Row{
			{Group: "g", Topic: "a.t", Partition: 0, Status: shadow.Equal, Checkpointd: 5, MM2: 5, Target: 5},
			{Group: "g", Topic: "a.t", Partition: 1, Status: shadow.Ahead, Checkpointd: 9, MM2: 5, Target: -1, AheadBy: 4, EarlierSeconds: &ahead},
		}}}
	disagree := []pipeline.ShadowReport{{Flow: "a->b", Counts: shadow.Counts{ByStatus: map[shadow.Status]int{shadow.Behind: 1}, Unexplained: 1},
		Rows: []shadow.Row{{Group: "g", Topic: "a.t", Status: shadow.Behind, Checkpointd: 5, MM2: 9, Target: 9,
			Reason: shadow.ReasonLowerTranslation, Unexplained: true}}}}
	for _, tc := range []struct {
		name    string
		serve   any // nil: 404
		args    []string
		wantErr error
		out     []string // substrings of stdout
		notOut  []string
	}{
		{name: "agreement", serve: agree, out: []string{"checkpointd_ahead 1", "withheld from the target: checkpoint 7", "a.t    1          checkpointd_ahead", "2.5"},
			notOut: []string{"a.t    0"}},
		{name: "all rows", serve: agree, args: []string{"--all"}, out: []string{"a.t    0          equal"}},
		{name: "unexplained fails", serve: disagree, wantErr: errDisagrees, out: []string{"lower_translation (unexplained)"}},
		{name: "json", serve: disagree, args: []string{"--format", "json"}, wantErr: errDisagrees, out: []string{`"unexplained": true`}},
		{name: "not in shadow mode", wantErr: errAny},
		{name: "bad format", serve: agree, args: []string{"--format", "csv"}, wantErr: errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/shadow" || tc.serve == nil {
					http.NotFound(w, r)
					return
				}
				_ = json.NewEncoder(w).Encode(tc.serve)
			}))
			defer srv.Close()
			var stdout, stderr strings.Builder
			err := dispatch(context.Background(), append([]string{"shadow-report", "--url", srv.URL}, tc.args...), &stdout, &stderr)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr == errAny && err == nil:
				t.Fatal("no error")
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			for _, s := range tc.out {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.notOut {
				if strings.Contains(stdout.String(), s) {
					t.Errorf("output has %q:\n%s", s, stdout.String())
				}
			}
		})
	}
}

var errAny = errors.New("any error")
