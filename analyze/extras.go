package analyze

// extras fills the report sections of loadExtras' data.
func (c *computation) extras() {
	c.runIdentity()
	c.plotExtras()
	c.gpuEnergy()
	c.gpuMemory()
	c.hostEnergy()
	c.server()
	c.scrapeCoverage()
}

// plotExtras gives the plots the steady-state level and the SLOs.
func (c *computation) plotExtras() {
	if ss := c.r.SteadyState; ss.Reached && ss.JoulesPerToken != nil {
		c.pd.SteadyJoulesPerToken = *ss.JoulesPerToken
	}
	c.pd.TTFTSLOSeconds, c.pd.TPOTSLOSeconds = c.p.SLOTTFT.Seconds(), c.p.SLOTPOT.Seconds()
}
