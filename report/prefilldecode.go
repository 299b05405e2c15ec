package report

// PrefillDecode is report.json "prefill_decode": the formal stage's GPU
// power per time bin regressed on its prefill and decode token rates,
//
//	P(t) = P0 + e_prefill·r_prefill(t) + e_decode·r_decode(t),
//
// by ordinary least squares (docs/analyze.md, "Prefill and decode
// energy"). Refused, with its reason and no coefficients, when the
// workload does not vary enough to tell the three terms apart.
type PrefillDecode struct {
	Method     string  `json:"method"`
	BinSeconds float64 `json:"bin_seconds"`
	Bins       int     `json:"bins"`
	// LagBins is K, chosen by BIC: the rates enter at bins t−K … t+K and
	// each coefficient is the sum over them (the power's response and the
	// clocks' offset may move a token's energy into a neighbouring bin).
	LagBins int `json:"lag_bins"`
	// RateCorrelation is the Pearson correlation of the two rate series;
	// ConditionNumber the 2-norm condition number of the standardized
	// design [r_prefill, r_decode] (each rate centred, scaled to unit
	// length; no intercept, no lags).
	RateCorrelation *float64 `json:"rate_correlation"`
	ConditionNumber *float64 `json:"condition_number"`
	// Refused says why there are no coefficients and what would fix it.
	Refused string `json:"refused,omitempty"`

	JoulesPerPrefillToken *float64 `json:"joules_per_prefill_token,omitempty"`
	JoulesPerDecodeToken  *float64 `json:"joules_per_decode_token,omitempty"`
	StaticWatts           *float64 `json:"static_watts,omitempty"`
	RSquared              *float64 `json:"r_squared,omitempty"`
	ResidualStdWatts      *float64 `json:"residual_std_watts,omitempty"`
	// CI95 maps each coefficient's key to its 95% interval from a block
	// bootstrap over the bins in time order (blocks of BlockLengthBins).
	CI95            map[string][2]float64 `json:"ci95,omitempty"`
	BlockLengthBins int                   `json:"block_length_bins,omitempty"`
	Resamples       int                   `json:"resamples,omitempty"`
	Seed            uint64                `json:"seed,omitempty"`
}

// Prefill/decode fit keys (PrefillDecode.CI95).
const (
	KeyJoulesPerPrefillToken = "joules_per_prefill_token"
	KeyJoulesPerDecodeToken  = "joules_per_decode_token"
	KeyStaticWatts           = "static_watts"
)
