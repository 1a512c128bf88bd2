package pgtest

import (
	"database/sql"
	"os"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

// TestStartServesQueries: the server Start returns answers queries, and
// its files (so its processes) belong to someone other than root.
func TestStartServesQueries(t *testing.T) {
	db, err := sql.Open("pgx", Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var two int
	if err := db.QueryRowContext(t.Context(), "SELECT 1 + 1").Scan(&two); err != nil || two != 2 {
		t.Fatalf("SELECT 1 + 1 = %d, %v", two, err)
	}
	var dataDir string
	if err := db.QueryRowContext(t.Context(), "SHOW data_directory").Scan(&dataDir); err != nil {
		t.Fatalf("SHOW data_directory: %v", err)
	}
	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid == 0 {
		t.Errorf("data directory %s belongs to root", dataDir)
	}
}
