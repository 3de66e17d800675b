// The forwarder in a process of its own: the code that serves the emulated network (a
// relay, a swarm of bots) keeps the CPU busy, and a forwarder among it sends packets
// late whenever the Go scheduler or the machine is behind, which TCP then sees as
// jitter (and, against a low retransmission floor, as loss). In its own process, with a
// real-time priority where the kernel grants one, it is woken as each packet is due.

package netem

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// forwarderEnv, set in a process's environment, makes package netem's init run the
// forwarder in that process instead of its main: the emulator re-executes the binary it
// runs in (a command, a test binary), which therefore needs no entry point of its own.
const forwarderEnv = "TICKRELAY_NETEM_FORWARDER"

// forwarderSpec is what the forwarder process is told (in forwarderEnv). Its TUN
// devices are its descriptors 3 (the server's) and 4 (the client's).
type forwarderSpec struct {
	Options Options `json:"options"`
}

// forwarderStats is the forwarder's answer to "stats".
type forwarderStats struct {
	Moved, Overflow int64
	Lag             Lag
	Priority        string
}

func init() {
	if spec := os.Getenv(forwarderEnv); spec != "" {
		os.Exit(runForwarder(spec, os.Stdin, os.Stdout))
	}
}

// runForwarder moves packets between descriptors 3 and 4 until its input ends (the
// emulator closed it, or died), answering "stats" lines with a JSON line.
func runForwarder(spec string, in io.Reader, out io.Writer) int {
	var s forwarderSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "netem forwarder: bad spec:", err)
		return 2
	}
	prio := raisePriority()
	// Non-blocking before os.NewFile, which then puts them on the poller (exec handed
	// them over blocking; File.Fd would make them so again).
	for _, fd := range []int{3, 4} {
		if err := unix.SetNonblock(fd, true); err != nil {
			fmt.Fprintln(os.Stderr, "netem forwarder: descriptor", fd, err)
			return 2
		}
	}
	tuns := []*os.File{os.NewFile(3, "tun-server"), os.NewFile(4, "tun-client")}
	dirs := startDirections(tuns[0], tuns[1], s.Options)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "stats" {
			st := forwarderStats{Priority: prio}
			st.Moved, st.Overflow, st.Lag = sumDirections(dirs)
			b, _ := json.Marshal(st)
			fmt.Fprintln(out, string(b))
		}
	}
	for _, f := range tuns {
		f.Close()
	}
	for _, d := range dirs {
		d.stop()
	}
	return 0
}

// raisePriority puts every thread of this process (and so every thread they start) in
// the real-time FIFO class, or failing that at nice −20, and says which it got.
func raisePriority() string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return "normal"
	}
	rt, nice := true, true
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 10}, 0) != nil {
			rt = false
			if unix.Setpriority(unix.PRIO_PROCESS, tid, -20) != nil {
				nice = false
			}
		}
	}
	switch {
	case rt:
		return "real-time (SCHED_FIFO 10)"
	case nice:
		return "nice -20"
	}
	return "normal"
}

// startDirections starts both directions between the server's and the client's TUN.
func startDirections(server, client *os.File, o Options) []*direction {
	rng := rand.New(rand.NewPCG(o.Seed, 0x6e6574656d))
	var dirs []*direction
	for i, pair := range [][2]*os.File{{client, server}, {server, client}} {
		sh := shaper{delay: o.Delay, jitter: o.Jitter, reorder: o.Reorder, rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))}
		dirs = append(dirs, newDirection(pair[0], pair[1], sh))
	}
	return dirs
}

func sumDirections(dirs []*direction) (moved, overflow int64, lag Lag) {
	for _, d := range dirs {
		d.mu.Lock()
		moved += d.packets
		overflow += d.dropped
		lag.Max = max(lag.Max, d.lag.Max)
		lag.Over1ms += d.lag.Over1ms
		lag.Over5ms += d.lag.Over5ms
		d.mu.Unlock()
	}
	return moved, overflow, lag
}

// forwarderProc is the forwarder process, seen from the emulator.
type forwarderProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
}

// startForwarder re-executes this binary as the forwarder of server and client.
func startForwarder(server, client *os.File, o Options) (*forwarderProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(forwarderSpec{Options: o})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), forwarderEnv+"="+string(spec))
	cmd.ExtraFiles = []*os.File{server, client}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &forwarderProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if _, err := p.stats(); err != nil { // it runs, and answers
		p.stop()
		return nil, fmt.Errorf("netem: the forwarder process: %w", err)
	}
	return p, nil
}

func (p *forwarderProc) stats() (forwarderStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st forwarderStats
	if _, err := io.WriteString(p.in, "stats\n"); err != nil {
		return st, err
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(line, &st)
}

// stop ends the forwarder (its input closes) and waits for it, killing it after 5 s.
func (p *forwarderProc) stop() error {
	p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		return errors.Join(errors.New("netem: the forwarder did not stop"), <-done)
	}
}
