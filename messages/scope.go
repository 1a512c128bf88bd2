package messages

// TracerScope is the instrumentation scope of every span checkpointd makes,
// in the handlers and in the adapters that trace, so that one name selects
// them all in a tracing backend.
const TracerScope = "github.com/checkpointd/checkpointd"
