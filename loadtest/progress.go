package loadtest

import (
	"fmt"
	"time"
)

// progress redraws one status line a second on cfg.Progress.
type progress struct {
	quit chan struct{}
	done chan struct{}
}

func startProgress(sw *swarm) *progress {
	p := &progress{quit: make(chan struct{}), done: make(chan struct{})}
	w := sw.cfg.Progress
	if w == nil {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		lastF, lastC, lastT := sw.frames.Load(), sw.commands.Load(), start
		for {
			select {
			case <-p.quit:
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				f, c := sw.frames.Load(), sw.commands.Load()
				dt := now.Sub(lastT).Seconds()
				fmt.Fprintf(w, "\r\033[K%5.0fs/%s  matches %d  frames/s %.0f  commands/s %.0f  p99 latency %.1f ms",
					now.Sub(start).Seconds(), sw.cfg.Duration, sw.running.Load(),
					float64(f-lastF)/dt, float64(c-lastC)/dt, ms(sw.rec.latencyP99()))
				lastF, lastC, lastT = f, c, now
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	<-p.done
}
