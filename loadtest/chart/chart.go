// Package chart draws a load test's report as a PNG (`tickrelay loadtest --plot`),
// keeping the plotting library out of the load tester itself.
package chart

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/tickrelay/tickrelay/loadtest"
)

// WritePNG draws r as a PNG: the command→frame latency histogram above, the
// frame jitter (p99 and max per second) over the window below, and with prediction
// (Config.Predict) the rollbacks by depth under them, titled with the own commands'
// latency in the head against in the game.
func WritePNG(w io.Writer, r *loadtest.Report) error {
	top := plot.New()
	top.Title.Text = fmt.Sprintf("command→frame latency: %d matches × %d players, %d Hz (p99 %.1f ms, budget %.1f ms)",
		r.Matches, r.Players, r.TickRate, r.Latency.P99, r.LatencyBudgetMs)
	top.X.Label.Text = "latency (ms)"
	top.Y.Label.Text = "commands"
	if len(r.LatencyHist) > 0 {
		xys := make(plotter.XYs, len(r.LatencyHist))
		for i, b := range r.LatencyHist {
			xys[i] = plotter.XY{X: (b.FromMs + b.ToMs) / 2, Y: float64(b.Count)}
		}
		h, err := plotter.NewHistogram(xys, min(len(xys), 60))
		if err != nil {
			return err
		}
		h.FillColor = color.RGBA{R: 70, G: 130, B: 180, A: 255}
		top.Add(h)
	}

	bottom := plot.New()
	bottom.Title.Text = fmt.Sprintf("frame-interval jitter per second (p99 over the run %.2f ms)", r.Jitter.P99)
	bottom.X.Label.Text = "time (s)"
	bottom.Y.Label.Text = "jitter (ms)"
	bottom.Add(plotter.NewGrid())
	if len(r.Series) > 0 {
		p99 := make(plotter.XYs, len(r.Series))
		mx := make(plotter.XYs, len(r.Series))
		for i, s := range r.Series {
			p99[i] = plotter.XY{X: float64(s.Second), Y: s.JitterP99Ms}
			mx[i] = plotter.XY{X: float64(s.Second), Y: s.JitterMaxMs}
		}
		l99, err := plotter.NewLine(p99)
		if err != nil {
			return err
		}
		l99.Color = color.RGBA{R: 200, G: 40, B: 40, A: 255}
		lmax, err := plotter.NewLine(mx)
		if err != nil {
			return err
		}
		lmax.Color = color.RGBA{R: 150, G: 150, B: 150, A: 255}
		lmax.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		bottom.Add(l99, lmax)
		bottom.Legend.Add("p99", l99)
		bottom.Legend.Add("max", lmax)
		bottom.Legend.Top = true
	}

	plots := [][]*plot.Plot{{top}, {bottom}}
	if r.Prediction != nil {
		p, err := rollbackPlot(r)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{p})
	}
	img := vgimg.New(vg.Points(960), vg.Points(360*float64(len(plots))))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Points(10), PadY: vg.Points(10), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12)}
	canvases := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		row[0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// rollbackPlot is the predicting bots' rollbacks by depth, titled with what prediction
// bought: their own commands in the head against in the game.
func rollbackPlot(r *loadtest.Report) (*plot.Plot, error) {
	pr := r.Prediction
	p := plot.New()
	p.Title.Text = fmt.Sprintf("prediction: own commands shown after p50 %.2f / p99 %.2f ms (in the game after %.1f / %.1f ms); %d rollbacks (%.1f/s a bot)",
		pr.Perceived.P50, pr.Perceived.P99, r.Latency.P50, r.Latency.P99, pr.Rollbacks, pr.RollbacksPerSecond)
	p.X.Label.Text = "rollback depth (ticks)"
	p.Y.Label.Text = "rollbacks"
	p.Add(plotter.NewGrid())
	if len(pr.DepthHist) == 0 {
		return p, nil
	}
	vals := make(plotter.Values, len(pr.DepthHist))
	for d, n := range pr.DepthHist {
		vals[d] = float64(n)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(max(4, 500/float64(len(vals)))))
	if err != nil {
		return nil, err
	}
	bars.Color = color.RGBA{R: 230, G: 140, B: 40, A: 255}
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(depthLabels(len(vals))...)
	p.X.Min, p.X.Max = -0.5, float64(len(vals))-0.5 // room for the outer bars
	return p, nil
}

// depthLabels names the bars 0..n-1.
func depthLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}
