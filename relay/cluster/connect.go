// The process's one NATS connection: where, as whom (credentials) and over what (TLS).

package cluster

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions say how to reach a production NATS system: the zero value is a plain
// connection (a development server, embedded NATS). Every file is read when connecting
// (and again at each reconnect, by nats.go); a missing or unreadable one is an error
// that names it.
type ConnectOptions struct {
	// CredsFile is a NATS user credentials file (the user's JWT and NKey seed, as `nsc`
	// or the NATS operator issues it), for a NATS system with accounts. Default: none.
	CredsFile string
	// TLSCA is a PEM file of the CA certificates that signed the NATS servers'
	// certificates. Default: the system's roots (when the servers speak TLS).
	TLSCA string
	// TLSCert and TLSKey are PEM files of this process's client certificate and its key,
	// for NATS servers that verify clients (mutual TLS). Both or neither.
	TLSCert, TLSKey string
}

// natsOptions checks o's files and turns them into nats.go options.
func (o ConnectOptions) natsOptions() ([]nats.Option, error) {
	var out []nats.Option
	for _, f := range []struct{ what, path string }{
		{"credentials file", o.CredsFile}, {"TLS CA file", o.TLSCA}, {"TLS client certificate", o.TLSCert}, {"TLS client key", o.TLSKey},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%w: the NATS %s %s cannot be read: %w", ErrConnect, f.what, f.path, err)
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, fmt.Errorf("%w: a NATS TLS client certificate and its key go together (--nats-tls-cert with --nats-tls-key)", ErrConnect)
	}
	if o.CredsFile != "" {
		out = append(out, nats.UserCredentials(o.CredsFile))
	}
	if o.TLSCA != "" {
		out = append(out, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		out = append(out, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return out, nil
}

// Connect opens the process's one NATS connection to urls (comma-separated), named for
// the node, with o's credentials and TLS, reconnecting for ever.
func Connect(urls, name string, o ConnectOptions) (*nats.Conn, error) {
	opts, err := o.natsOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name("tickrelay "+name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrConnect, urls, err)
	}
	return nc, nil
}
