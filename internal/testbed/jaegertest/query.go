package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Trace is one trace of the query API's JSON (GET /api/traces).
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Span is one span of a Trace. Span kinds are the tag span.kind (e.g.
// "consumer", "client"); OTLP span events are Logs with the event name in
// the field "event"; the parent is a CHILD_OF reference and each span link
// a FOLLOWS_FROM one, possibly into another trace.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	StartTime     int64       `json:"startTime"` // µs since the epoch
	Duration      int64       `json:"duration"`  // µs
	Tags          []KeyValue  `json:"tags"`
	Logs          []Log       `json:"logs"`
	ProcessID     string      `json:"processID"`
}

// Reference types of the query API.
const (
	ChildOf     = "CHILD_OF"
	FollowsFrom = "FOLLOWS_FROM"
)

// Reference is a span's parent (CHILD_OF) or a link (FOLLOWS_FROM).
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// KeyValue is a tag or a log field; Value is a string, a json.Number or a bool.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Log is a span event.
type Log struct {
	Timestamp int64      `json:"timestamp"`
	Fields    []KeyValue `json:"fields"`
}

// Process is the resource a span came from.
type Process struct {
	ServiceName string     `json:"serviceName"`
	Tags        []KeyValue `json:"tags"`
}

// Tag returns the value of tag key rendered as a string, and whether it is set.
func (s Span) Tag(key string) (string, bool) { return lookup(s.Tags, key) }

// TagMap returns the span's tags rendered as strings.
func (s Span) TagMap() map[string]string { return asMap(s.Tags) }

// Events returns the fields of the span's events (logs) named name, in order.
func (s Span) Events(name string) []map[string]string {
	var out []map[string]string
	for _, l := range s.Logs {
		if v, ok := lookup(l.Fields, "event"); ok && v == name {
			out = append(out, asMap(l.Fields))
		}
	}
	return out
}

// Ref returns the span's reference of type refType to the span spanID of
// trace traceID (hex, as in the API), if it has one.
func (s Span) Ref(refType, traceID, spanID string) bool {
	for _, r := range s.References {
		if r.RefType == refType && r.TraceID == traceID && r.SpanID == spanID {
			return true
		}
	}
	return false
}

func lookup(kvs []KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return fmt.Sprint(kv.Value), true
		}
	}
	return "", false
}

func asMap(kvs []KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = fmt.Sprint(kv.Value)
	}
	return out
}

// Traces returns up to 1000 traces of service from the query API's default
// window, the last two days (GET /api/traces?service=...). Jaeger stores spans asynchronously, and
// exporters batch: callers poll until what they expect is there.
func (j *Jaeger) Traces(ctx context.Context, service string) ([]Trace, error) {
	q := url.Values{}
	q.Set("service", service)
	q.Set("limit", "1000")
	var resp struct {
		Data   []Trace `json:"data"`
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	if err := j.get(ctx, "/api/traces?"+q.Encode(), &resp); err != nil {
		return nil, err
	}
	if len(resp.Errors) > 0 {
		return nil, fmt.Errorf("jaeger query: %v", resp.Errors)
	}
	return resp.Data, nil
}

// ErrTraceNotFound is what Trace returns while Jaeger holds no span of the
// trace yet.
var ErrTraceNotFound = errors.New("trace not found")

// Trace returns one trace by its hex ID (GET /api/traces/{id}), or
// ErrTraceNotFound.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (Trace, error) {
	var resp struct {
		Data []Trace `json:"data"`
	}
	err := j.get(ctx, "/api/traces/"+url.PathEscape(traceID), &resp)
	var status *statusError
	switch {
	case errors.As(err, &status) && status.code == http.StatusNotFound:
		return Trace{}, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	case err != nil:
		return Trace{}, err
	case len(resp.Data) == 0:
		return Trace{}, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	}
	return resp.Data[0], nil
}

// Services returns the services Jaeger has spans of (GET /api/services).
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var resp struct {
		Data []string `json:"data"`
	}
	err := j.get(ctx, "/api/services", &resp)
	return resp.Data, err
}

func (j *Jaeger) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{code: resp.StatusCode, msg: fmt.Sprintf("GET %s: %s: %s", path, resp.Status, tail(body, 5))}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("GET %s: decode: %w", path, err)
	}
	return nil
}

// statusError is a reply of the query API other than 200 OK.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }
