package client

// Datagrams is the datagram side of a WebTransport connection, for tests to wrap.
type Datagrams = datagrams

// SetDatagramHook wraps the datagrams of every WebTransport connection dialled after it
// (nil: none); it returns a function that restores the previous hook.
func SetDatagramHook(h func(Datagrams) Datagrams) (restore func()) {
	var p *func(datagrams) datagrams
	if h != nil {
		p = &h
	}
	old := datagramHook.Swap(p)
	return func() { datagramHook.Store(old) }
}
