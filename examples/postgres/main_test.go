package main

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/internal/testbed/pgtest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/pipeline"
)

// PostgreSQL runs in a helper process started from this test binary, as an
// unprivileged user when the tests run as root (see pgtest); kafkatest tears
// the real-Kafka test's clusters down.
func TestMain(m *testing.M) { os.Exit(pgtest.RunMainWith(m, kafkatest.RunMain)) }

// recorder keeps the checkpoint events a second handler got, by their
// kind and JSON, as the rows must hold them.
type recorder struct {
	mu   sync.Mutex
	seen map[string]int
}

func (r *recorder) handler() *events.Handler {
	return events.AddNoPublisherHandler("record", func(_ context.Context, e event.Event) error {
		if e.Kind() != event.KindCheckpointDecided && e.Kind() != event.KindCheckpointWritten {
			return nil
		}
		payload, err := event.Marshal(e)
		if err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen[e.Kind().String()+" "+string(payload)]++
		return nil
	})
}

func (r *recorder) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// row is one forwarded event as PostgreSQL holds it.
type row struct {
	key   string // kind and payload, as recorder keys them
	event event.Event
}

// readRows reads every row of the example's table and decodes each one
// back into its event, checking its metadata against its payload.
func readRows(ctx context.Context, db *stdsql.DB) ([]row, error) {
	rows, err := db.QueryContext(ctx, `SELECT uuid, payload::text, metadata::text FROM watermill_`+Topic+` ORDER BY "offset"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var uuid, payload, meta string
		if err := rows.Scan(&uuid, &payload, &meta); err != nil {
			return nil, err
		}
		msg := message.NewMessage(uuid, []byte(payload))
		if err := json.Unmarshal([]byte(meta), &msg.Metadata); err != nil {
			return nil, fmt.Errorf("row %s: metadata %s: %w", uuid, meta, err)
		}
		e, err := events.JSONMarshaler{}.Unmarshal(msg)
		if err != nil {
			return nil, fmt.Errorf("row %s: %w", uuid, err)
		}
		if got := msg.Metadata.Get(events.MetaGroup); got != e.SourceGroup() {
			return nil, fmt.Errorf("row %s: metadata group %q, payload group %q", uuid, got, e.SourceGroup())
		}
		out = append(out, row{key: e.Kind().String() + " " + payload, event: e})
	}
	return out, rows.Err()
}

// TestPostgresRowsMatchEvents runs the example in process on embedded
// clusters against a real PostgreSQL: every checkpoint event a second
// handler sees is one row, and the rows hold the emitted decision and the
// written checkpoint of a group, and the skip of a group behind the syncs.
func TestPostgresRowsMatchEvents(t *testing.T) {
	db := openDB(t)
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	pair.Source.Commit(t, "late", orders, 2) // before the only sync: MM2's -1
	cfg, _, err := config.FromProperties(pair.Properties(nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := startExample(t, cfg, db)
	awaitRows(t, db, rec, wantRows("app", "late", "source.orders"))
}

// openDB starts a PostgreSQL for t and connects to it; both end with t,
// after what t started later (cleanups run last first).
func openDB(t *testing.T) *stdsql.DB {
	t.Helper()
	db, err := stdsql.Open("pgx", pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// startExample runs the example with a recorder next to its forwarder until
// t ends, and returns the recorder.
func startExample(t *testing.T, cfg *config.Config, db *stdsql.DB) *recorder {
	t.Helper()
	rec := &recorder{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)), pipeline.WithEventHandler(rec.handler()))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the example did not stop")
		}
	})
	return rec
}

// wantRows are the rows both tests expect: app committed at 10 is emitted
// and written as 10 -> 6 on the remote topic (one sync, 5 -> 5), late
// committed at 2 is behind that sync.
func wantRows(app, late, remote string) map[string]func(event.Event) bool {
	return map[string]func(event.Event) bool{
		app + " emitted": func(e event.Event) bool {
			d, ok := e.(event.CheckpointDecided)
			return ok && d.Group == app && d.Emitted && d.UpstreamOffset == 10 && d.DownstreamOffset == 6
		},
		app + " written": func(e event.Event) bool {
			w, ok := e.(event.CheckpointWritten)
			return ok && w.Group == app && w.Topic == remote && w.UpstreamOffset == 10 && w.DownstreamOffset == 6
		},
		late + " behind the oldest sync": func(e event.Event) bool {
			d, ok := e.(event.CheckpointDecided)
			return ok && d.Group == late && !d.Emitted && d.Reason == messages.SkipBehindOldestSync
		},
	}
}

// awaitRows waits until PostgreSQL holds a row matching each of want and
// the rows are exactly the checkpoint events rec saw.
func awaitRows(t *testing.T, db *stdsql.DB, rec *recorder, want map[string]func(event.Event) bool) {
	t.Helper()
	var (
		rows    []row
		readErr error
		missing []string
	)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		// Until the first event the table does not exist: an error here is retried.
		if rows, readErr = readRows(t.Context(), db); readErr != nil {
			continue
		}
		missing = missing[:0]
		for name, match := range want {
			if !slices.ContainsFunc(rows, func(r row) bool { return match(r.event) }) {
				missing = append(missing, name)
			}
		}
		inDB := map[string]int{}
		for _, r := range rows {
			inDB[r.key]++
		}
		// The two handlers run apart: compare when both have caught up.
		if len(missing) == 0 && maps.Equal(inDB, rec.snapshot()) {
			t.Logf("%d rows, the checkpoint events the recorder saw", len(rows))
			return
		}
	}
	t.Fatalf("rows do not match the events: missing %v; last read error %v\nrows:\n%v\nrecorded:\n%v", missing, readErr, rows, rec.snapshot())
}
