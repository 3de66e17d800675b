//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/tickrelay/tickrelay/loadtest"
)

// pinSelf re-executes this command under `taskset -c cpus` with GOMAXPROCS set to their
// number: pinning a running Go process would move only its calling thread.
func pinSelf(cpus string) error {
	n, err := loadtest.CPUCount(cpus)
	if err != nil {
		return fmt.Errorf("--relay-cpus: %w", err)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("--relay-cpus needs taskset (util-linux): %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), pinnedEnv+"=1", fmt.Sprintf("GOMAXPROCS=%d", n))
	return syscall.Exec(taskset, append([]string{"taskset", "-c", cpus, exe}, os.Args[1:]...), env)
}
