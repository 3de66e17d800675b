package chart

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/loadtest"
)

// A report draws as a PNG of two panels (latency, jitter per second), and a third, the
// rollbacks by depth, when its bots predicted; an empty report draws too.
func TestAReportDrawsTwoPanelsAndAThirdWithPrediction(t *testing.T) {
	r := &loadtest.Report{Matches: 2, Players: 3, TickRate: 30, LatencyBudgetMs: 100}
	r.Latency.P99 = 40
	for i := range 20 {
		r.LatencyHist = append(r.LatencyHist, loadtest.Bucket{FromMs: float64(i), ToMs: float64(i + 1), Count: int64(i)})
	}
	for s := range 10 {
		r.Series = append(r.Series, loadtest.SeriesPoint{Second: s, JitterP99Ms: 1 + float64(s%3), JitterMaxMs: 4})
	}
	draw := func(r *loadtest.Report) (w, h int) {
		var b bytes.Buffer
		require.NoError(t, WritePNG(&b, r))
		img, err := png.Decode(&b)
		require.NoError(t, err)
		return img.Bounds().Dx(), img.Bounds().Dy()
	}
	w2, h2 := draw(r)
	predicting := *r
	predicting.Prediction = &loadtest.PredictionReport{Rollbacks: 12, DepthHist: []int64{0, 7, 4, 1}}
	w3, h3 := draw(&predicting)
	assert.Equal(t, w2, w3)
	assert.Equal(t, h2*3/2, h3, "three panels, not two")
	draw(&loadtest.Report{})
}
