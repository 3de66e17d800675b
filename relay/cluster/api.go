// The match API on every node: requests about a match are served by its owner,
// forwarded over NATS request/reply.

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/relay"
)

// Handler serves the relay's endpoints (it wraps the server's own handler) so that any
// node answers for any match:
//
//	POST   /v1/matches               placed on the least loaded node, which creates it
//	GET    /v1/matches               every node's matches, each with its node
//	GET    /v1/matches/{id}          answered by the match's node
//	DELETE /v1/matches/{id}          done by the match's node
//	GET    /v1/matches/{id}/replay   the match's stream from JetStream (a replay file)
//	GET    /v1/nodes                 the cluster's nodes, their leases and loads
//	GET    /v1/ws                    joins: players are redirected to the match's node,
//	                                 spectators are served here
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", n.handler)
	admin := n.srv.RequireAdmin
	mux.HandleFunc("POST "+relay.PathMatches, admin(n.createMatch))
	mux.HandleFunc("GET "+relay.PathMatches, admin(n.listMatches))
	mux.HandleFunc("GET "+relay.PathMatches+"/{id}", admin(n.toOwner))
	mux.HandleFunc("DELETE "+relay.PathMatches+"/{id}", admin(n.toOwner))
	mux.HandleFunc("GET "+relay.PathMatches+"/{id}/replay", admin(n.replay))
	mux.HandleFunc("GET /v1/nodes", admin(n.nodes))
	return mux
}

// apiRequest is an HTTP request forwarded to a node over NATS; apiReply its answer.
type apiRequest struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Auth   string `json:"auth,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

type apiReply struct {
	Status int    `json:"status"`
	Body   []byte `json:"body"`
	// RetryAfter is the answer's Retry-After header (a 503's), which the node that
	// forwarded the request passes on.
	RetryAfter string `json:"retry_after,omitempty"`
}

// forward sends r to node and returns its answer.
func (n *Node) forward(ctx context.Context, node string, r apiRequest) (apiReply, error) {
	b, _ := json.Marshal(r)
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(ctx, fmt.Sprintf(nodeAPIFormat, node), b)
	if err != nil {
		return apiReply{}, fmt.Errorf("cluster: node %s did not answer: %w", node, err)
	}
	n.met.forwarded.Inc()
	var rep apiReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return apiReply{}, fmt.Errorf("cluster: node %s answered garbage: %w", node, err)
	}
	return rep, nil
}

// serveRequest answers a forwarded request with the relay's own handler (a new match
// is registered in the directory before the answer leaves).
func (n *Node) serveRequest(msg *nats.Msg) {
	go func() {
		var r apiRequest
		var rep apiReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			rep = errorReply(fmt.Errorf("%w: a forwarded request that is not JSON: %w", relay.ErrInvalid, err))
		} else {
			rep = n.local(r)
		}
		b, _ := json.Marshal(rep)
		if err := msg.Respond(b); err != nil {
			n.log.Warn("answering a forwarded request", zap.Error(err))
		}
	}()
}

// local serves r with the relay's own handler.
func (n *Node) local(r apiRequest) apiReply {
	req, err := http.NewRequest(r.Method, r.Path, bytes.NewReader(r.Body))
	if err != nil {
		return errorReply(fmt.Errorf("%w: %w", relay.ErrInvalid, err))
	}
	req.Host = hostOf(n.opts.URL)
	if r.Auth != "" {
		req.Header.Set("Authorization", r.Auth)
	}
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	n.handler.ServeHTTP(w, req)
	rep := apiReply{Status: w.status, Body: w.body.Bytes(), RetryAfter: w.header.Get("Retry-After")}
	if r.Method == http.MethodPost && r.Path == relay.PathMatches && w.status == http.StatusCreated {
		var created relay.CreateResponse
		ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
		defer cancel()
		err := json.Unmarshal(rep.Body, &created)
		var id uuid.UUID
		if err == nil {
			id, err = uuid.Parse(created.MatchID)
		}
		if err == nil {
			err = n.register(ctx, id)
		}
		if err != nil {
			n.log.Error("a new match could not be registered in the directory; ending it", zap.Error(err))
			if id != uuid.Nil {
				_ = n.srv.EndMatch(id)
			}
			return errorReply(fmt.Errorf("%w: the relay cluster could not register the match: %w", relay.ErrUnavailable, err))
		}
		// The new load shows at once, so that the next placement sees it.
		_ = n.heartbeat(ctx)
	}
	return rep
}

// recorder is the http.ResponseWriter of a forwarded request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header         { return w.header }
func (w *recorder) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *recorder) WriteHeader(code int)        { w.status = code }

// errorReply is the answer relay.WriteError gives for err, as a forwarded reply.
func errorReply(err error) apiReply {
	w := &recorder{header: http.Header{}}
	relay.WriteError(w, err)
	return apiReply{Status: w.status, Body: w.body.Bytes(), RetryAfter: w.header.Get("Retry-After")}
}

// writeReply answers with rep; a 503 always carries Retry-After, as the relay's do.
func writeReply(w http.ResponseWriter, rep apiReply) {
	if rep.Status == http.StatusServiceUnavailable && rep.RetryAfter == "" {
		rep.RetryAfter = relay.RetryAfter
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body)
}

// errNotUUID refuses a match id that is not one.
var errNotUUID = fmt.Errorf("%w: the match id must be a UUID", relay.ErrInvalid)

func requestOf(r *http.Request, body []byte) apiRequest {
	return apiRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body}
}

func (n *Node) createMatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, relay.MaxRequestBody))
	if err != nil {
		relay.WriteError(w, fmt.Errorf("%w: reading the request: %w", relay.ErrInvalid, err))
		return
	}
	target, err := n.place()
	if err != nil {
		relay.WriteError(w, fmt.Errorf("%w: %w", relay.ErrUnavailable, err))
		return
	}
	req := requestOf(r, body)
	var rep apiReply
	if target.Name == n.opts.Name {
		rep = n.local(req)
	} else if rep, err = n.forward(r.Context(), target.Name, req); err != nil {
		// The node placed on did not answer (it may be failing): try again, as for any 503.
		relay.WriteError(w, fmt.Errorf("%w: %w", relay.ErrUnavailable, err))
		return
	}
	var created relay.CreateResponse
	if rep.Status == http.StatusCreated && json.Unmarshal(rep.Body, &created) == nil {
		if id, err := uuid.Parse(created.MatchID); err == nil {
			n.placed(id, target.Name)
		}
	}
	writeReply(w, rep)
}

// listTimeout bounds how long GET /v1/matches waits for the other nodes' lists: 2 s. A
// node that does not answer in time is named in the X-Tickrelay-Missing-Nodes header.
const listTimeout = 2 * time.Second

// NodeMatch is a match in the cluster-wide list: its status and its node.
type NodeMatch struct {
	Node string `json:"node"`
	relay.MatchInfo
}

func (n *Node) listMatches(w http.ResponseWriter, r *http.Request) {
	var out []NodeMatch
	for _, m := range n.srv.Matches() {
		out = append(out, NodeMatch{Node: n.opts.Name, MatchInfo: m})
	}
	// Every other live node at once, each given listTimeout: a node that just died (its
	// lease not yet expired) costs one timeout, not one per node.
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		missing []string
	)
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	for _, node := range n.Nodes() {
		if node.Self || !node.Alive {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := n.forward(ctx, node.Name, requestOf(r, nil))
			var ms []relay.MatchInfo
			if err == nil && rep.Status == http.StatusOK {
				err = json.Unmarshal(rep.Body, &ms)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil || rep.Status != http.StatusOK {
				missing = append(missing, node.Name)
				return
			}
			for _, m := range ms {
				out = append(out, NodeMatch{Node: node.Name, MatchInfo: m})
			}
		}()
	}
	wg.Wait()
	slices.Sort(missing)
	slices.SortFunc(out, func(a, b NodeMatch) int {
		if a.Created != b.Created {
			if a.Created < b.Created {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	if len(missing) > 0 {
		w.Header().Set("X-Tickrelay-Missing-Nodes", fmt.Sprint(missing))
	}
	if out == nil {
		out = []NodeMatch{}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	writeReply(w, apiReply{Status: http.StatusOK, Body: b})
}

// toOwner serves a request about one match on its node.
func (n *Node) toOwner(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		relay.WriteError(w, errNotUUID)
		return
	}
	if _, ok := n.srv.Match(id); ok {
		n.handler.ServeHTTP(w, r)
		return
	}
	s, err := n.entry(r.Context(), id)
	if errors.Is(err, relay.ErrNoMatch) {
		relay.WriteError(w, fmt.Errorf("%w: no match %s in this relay cluster", relay.ErrNotFound, id))
		return
	}
	if err != nil {
		relay.WriteError(w, fmt.Errorf("%w: %w", relay.ErrUnavailable, err))
		return
	}
	rep, err := n.forward(r.Context(), s.v.Node, requestOf(r, nil))
	if err != nil {
		relay.WriteError(w, fmt.Errorf("%w: match %s's node %s is unreachable (if it failed, another node takes the match over within the lease): %w", relay.ErrUnavailable, id, s.v.Node, err))
		return
	}
	writeReply(w, rep)
}

func (n *Node) replay(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		relay.WriteError(w, errNotUUID)
		return
	}
	// The first bytes decide the status: buffer until then.
	hw := &headerOnFirstWrite{w: w}
	if _, err := n.WriteReplay(r.Context(), id, hw); err != nil {
		if !hw.started {
			kind := relay.ErrUnavailable
			if errors.Is(err, ErrNoReplay) {
				kind = relay.ErrNotFound
			}
			relay.WriteError(w, fmt.Errorf("%w: %w", kind, err))
			return
		}
		n.log.Warn("streaming a replay failed midway", zap.String("match", id.String()), zap.Error(err))
	}
}

// headerOnFirstWrite sets the replay's headers when its first bytes are written.
type headerOnFirstWrite struct {
	w       http.ResponseWriter
	started bool
}

func (h *headerOnFirstWrite) Write(b []byte) (int, error) {
	if !h.started {
		h.started = true
		h.w.Header().Set("Content-Type", "application/octet-stream")
		h.w.WriteHeader(http.StatusOK)
	}
	return h.w.Write(b)
}

func (n *Node) nodes(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.MarshalIndent(n.Nodes(), "", "  ")
	writeReply(w, apiReply{Status: http.StatusOK, Body: b})
}

// hostOf is the host:port of a ws:// or http:// URL.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
