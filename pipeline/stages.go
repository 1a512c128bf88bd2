package pipeline

// Stages names the pipeline's stages and their clusters, for /readyz and
// /healthz when one process runs several flows.
func (p *Pipeline) Stages() []string { return p.health.Stages() }
