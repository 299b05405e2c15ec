package analyze

import "context"

// loadExtras reads what the report holds beside GPU energy and requests:
// the run's identity, host energy, GPU memory and the engine's own metrics.
func (l *loader) loadExtras(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan) error {
	if err := l.loadRunInfo(ctx, d); err != nil {
		return err
	}
	if err := l.loadGPUMemory(ctx, d, gpuSel, sp); err != nil {
		return err
	}
	if err := l.loadGPUUtil(ctx, d, gpuSel, sp); err != nil {
		return err
	}
	if err := l.loadEngine(ctx, d, sp); err != nil {
		return err
	}
	return l.loadHost(ctx, d, sp)
}

// extras fills the report sections of loadExtras' data.
func (c *computation) extras() {
	c.runIdentity()
	c.plotExtras()
	c.gpuEnergy()
	c.gpuMemory()
	c.hostEnergy()
	c.server()
	c.scrapeCoverage()
	c.diagnose()
	c.prefillDecode()
}

// plotExtras gives the plots the steady-state level and the SLOs.
func (c *computation) plotExtras() {
	if ss := c.r.SteadyState; ss.Reached && ss.JoulesPerToken != nil {
		c.pd.SteadyJoulesPerToken = *ss.JoulesPerToken
	}
	c.pd.TTFTSLOSeconds, c.pd.TPOTSLOSeconds = c.p.SLOTTFT.Seconds(), c.p.SLOTPOT.Seconds()
}
