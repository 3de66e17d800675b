// The client side of the match API, for the Go programs that create matches: the demo,
// the load tester, tests. A game server in another language does the same with its own
// HTTP client (see the route list in api.go).

package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The API's paths, served by a relay (Handler) and by every node of a cluster alike.
const (
	PathWS      = "/v1/ws"      // the WebSocket endpoint
	PathMatches = "/v1/matches" // the match API
)

// APIError is the API's refusal of a request: its status and what it said (the relay
// says what was wrong and what to send; see api.go's errors).
type APIError struct {
	Op     string // what was asked, e.g. "create match"
	Status string // e.g. "400 Bad Request"
	Code   int
	Body   string // the answer's text, at most 4 KiB
}

func (e *APIError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Op, e.Status, e.Body) }

// ReadAPIError reads the API's refusal of op from res (its body, up to 4 KiB).
func ReadAPIError(op string, res *http.Response) *APIError {
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return &APIError{Op: op, Status: res.Status, Code: res.StatusCode, Body: string(bytes.TrimSpace(msg))}
}

// PostMatch creates a match through the API at base (http(s)://host:port of a relay or of
// a cluster's node) with the admin key, as a game server would; hc nil is
// http.DefaultClient. A refusal is an *APIError.
func PostMatch(ctx context.Context, hc *http.Client, base, adminKey string, req CreateRequest) (*CreateResponse, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+PathMatches, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if adminKey != "" {
		hr.Header.Set("Authorization", "Bearer "+adminKey)
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("create match: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return nil, ReadAPIError("create match", res)
	}
	var resp CreateResponse
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		return nil, fmt.Errorf("create match: the answer is not a CreateResponse: %w", err)
	}
	return &resp, nil
}
