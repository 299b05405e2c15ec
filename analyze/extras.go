package analyze

import "context"

// loadExtras reads what the report holds beside GPU energy and requests:
// the run's identity, host energy, GPU memory and the engine's own metrics.
func (l *loader) loadExtras(ctx context.Context, d *RunData, gpuSel string, sp rawSpan) error {
	return l.loadRunInfo(ctx, d)
}

// extras fills the report sections of loadExtras' data.
func (c *computation) extras() {
	c.runIdentity()
}
