//go:build !unix

package cluster_test

// onLameDuck: no SIGUSR2 here, so no lame duck by signal (the upgrade drill is unix's).
func onLameDuck(func()) (stop func()) { return func() {} }
