//go:build !unix

package relay

import "errors"

const nonBlockingWrites = false

func (r *rawConn) tryWrite([]byte) (int, error) {
	return 0, errors.New("relay: no non-blocking writes on this platform")
}
