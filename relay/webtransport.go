// Serving the relay over WebTransport (HTTP/3 over UDP) beside its WebSocket endpoint.
// A session's one bidirectional stream carries the WebSocket protocol unchanged (the
// upgrade request, then WebSocket messages), so a player on it is served by the same
// handler, session, tokens, limits and match actor as one on TCP: one match may mix
// players on both.

package relay

import (
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/tickrelay/tickrelay/internal/lib/wtransport"
)

// WebTransportLink is what a client needs to open a match's connection over WebTransport.
type WebTransportLink struct {
	// URL is the endpoint: https, the relay's host, its UDP port and the WebSocket path.
	URL string `json:"url"`
	// CertHashes are the hex SHA-256 hashes of the relay's self-signed certificates, the
	// one served now and its successor (a browser's serverCertificateHashes); empty when
	// the relay serves an operator's certificate, which clients verify as usual.
	CertHashes []string `json:"cert_hashes,omitempty"`
}

// webTransportEndpoint is a listening WebTransport endpoint: its UDP port and, for
// self-signed certificates, where their hashes come from.
type webTransportEndpoint struct {
	port  int
	certs *wtransport.Certificates // nil with an operator's certificate
}

// webTransportLink is the link for a match whose WebSocket URL is wsURL, or nil
// without an endpoint (or a URL it cannot read a host from).
func (s *Server) webTransportLink(wsURL string) *WebTransportLink {
	e := s.wt.Load()
	if e == nil {
		return nil
	}
	u, err := url.Parse(wsURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	l := &WebTransportLink{URL: (&url.URL{Scheme: "https", Host: net.JoinHostPort(u.Hostname(), strconv.Itoa(e.port)), Path: u.Path}).String()}
	if e.certs != nil {
		for _, h := range e.certs.Hashes() {
			l.CertHashes = append(l.CertHashes, hex.EncodeToString(h[:]))
		}
	}
	return l
}

// withWebTransport adds what a page needs to open l to a browser link's fragment
// (wt: the endpoint's URL; wt_hash: the certificates' hashes, comma-separated), beside
// the token: like it, it never reaches a server's logs.
func withWebTransport(link string, l *WebTransportLink) string {
	if link == "" {
		return link
	}
	link += "&wt=" + url.QueryEscape(l.URL)
	if len(l.CertHashes) > 0 {
		link += "&wt_hash=" + strings.Join(l.CertHashes, ",")
	}
	return link
}

// listenWebTransport opens o's WebTransport endpoint, nil when o names none. Its TLS is
// the operator's certificate when o has one, else self-signed rotating ones.
func (s *Server) listenWebTransport(o ListenOptions) (*wtransport.Listener, error) {
	pc := o.WebTransportConn
	if pc == nil && o.WebTransportAddr == "" {
		return nil, nil
	}
	e := &webTransportEndpoint{}
	tlsConf := &tls.Config{}
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("relay: WebTransport certificate: %w", err)
		}
		tlsConf.Certificates = []tls.Certificate{cert}
	} else {
		certs, err := wtransport.NewCertificates(certHosts(o.WebTransportAddr), nil)
		if err != nil {
			return nil, err
		}
		e.certs, tlsConf.GetCertificate = certs, certs.GetCertificate
	}
	if pc == nil {
		var err error
		if pc, err = net.ListenPacket("udp", o.WebTransportAddr); err != nil {
			return nil, fmt.Errorf("relay: WebTransport UDP address: %w", err)
		}
	}
	ua, ok := pc.LocalAddr().(*net.UDPAddr)
	if !ok {
		pc.Close()
		return nil, errors.New("relay: the WebTransport socket is not UDP")
	}
	l, err := wtransport.Listen(pc, tlsConf, wtransport.ListenOptions{Path: PathWS})
	if err != nil {
		pc.Close()
		return nil, err
	}
	e.port = ua.Port
	s.wt.Store(e)
	return l, nil
}

// certHosts are the names a self-signed certificate is made for: the address's host if
// it names one, and loopback's (clients pin the hash, not the name).
func certHosts(addr string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			hosts = append([]string{h}, hosts...)
		}
	}
	return hosts
}
