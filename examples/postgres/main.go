// Command postgres is checkpointd forwarding its checkpoint events to
// PostgreSQL with watermill-sql: each decision (emitted, or skipped with its
// reason) and each checkpoint written becomes one row of the table
// watermill_checkpointd_checkpoints, the event as JSON in payload and its
// kind, source group and trace context in metadata (events.JSONMarshaler).
// A watermill-sql subscriber on the topic checkpointd_checkpoints reads
// them back as messages, and events.JSONMarshaler.Unmarshal as typed events;
// plain SQL reads them too:
//
//	SELECT payload->>'group', payload->>'reason' FROM watermill_checkpointd_checkpoints
//	 WHERE metadata->>'checkpointd_event' = 'checkpoint_decided';
//
// Run it with the connection string in DATABASE_URL (or --dsn):
//
//	DATABASE_URL=postgres://checkpointd@db:5432/ops go run ./examples/postgres --config mm2-checkpoint.yaml
package main

import (
	"context"
	stdsql "database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/pipeline"
)

// Topic is the Watermill topic the events are published to; watermill-sql's
// default PostgreSQL schema keeps it in the table "watermill_" + Topic.
const Topic = "checkpointd_checkpoints"

func main() {
	path := flag.String("config", "", "checkpointd configuration (MM2 property names)")
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := load(ctx, *path, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "postgres:", err)
		os.Exit(1)
	}
}

func load(ctx context.Context, path, dsn string) error {
	if path == "" || dsn == "" {
		return errors.New("--config and --dsn (or DATABASE_URL) are required")
	}
	cfg, _, err := config.Load(path, nil, os.Environ())
	if err != nil {
		return err
	}
	db, err := stdsql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("open PostgreSQL: %w", err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return run(ctx, cfg, db, slog.Default())
}

// run runs checkpointd with the forwarder until ctx ends; extra options
// come after it (the test adds a handler that records the same events).
func run(ctx context.Context, cfg *config.Config, db *stdsql.DB, logger *slog.Logger, extra ...pipeline.Option) error {
	// The table is created on the first publish, so a new database works as is.
	pub, err := sql.NewPublisher(sql.BeginnerFromStdSQL(db), sql.PublisherConfig{
		SchemaAdapter:        sql.DefaultPostgreSQLSchema{},
		AutoInitializeSchema: true,
	}, watermill.NewSlogLogger(logger))
	if err != nil {
		return fmt.Errorf("watermill-sql publisher: %w", err)
	}
	defer pub.Close()
	// A failed insert is retried by the event bus (3 times, with backoff),
	// then the event is dropped and counted; the pipeline never waits.
	forward := events.Forward("postgres", Topic, pub, events.JSONMarshaler{},
		event.KindCheckpointDecided, event.KindCheckpointWritten)
	opts := append([]pipeline.Option{pipeline.WithLogger(logger), pipeline.WithEventHandler(forward)}, extra...)
	p, err := pipeline.New(ctx, cfg, opts...)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}
