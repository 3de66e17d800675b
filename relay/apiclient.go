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

// DeleteMatch ends match id through the API at base (as PostMatch) and returns its final
// status. A refusal is an *APIError: 404 for a match the relay does not know (or no longer
// keeps), 409 for one that had already ended.
func DeleteMatch(ctx context.Context, hc *http.Client, base, adminKey, id string) (*MatchInfo, error) {
	var info MatchInfo
	if err := callAPI(ctx, hc, http.MethodDelete, base+PathMatches+"/"+id, adminKey, nil, http.StatusOK, "end match", &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// callAPI sends a request to the match API and decodes the answer of status want into
// out; another status is an *APIError named op.
func callAPI(ctx context.Context, hc *http.Client, method, url, adminKey string, body []byte, want int, op string, out any) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	hr, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if adminKey != "" {
		hr.Header.Set("Authorization", "Bearer "+adminKey)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	res, err := hc.Do(hr)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		return ReadAPIError(op, res)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: the answer is not what the API sends: %w", op, err)
	}
	return nil
}

// PostMatch creates a match through the API at base (http(s)://host:port of a relay or of
// a cluster's node) with the admin key, as a game server would; hc nil is
// http.DefaultClient. A refusal is an *APIError.
func PostMatch(ctx context.Context, hc *http.Client, base, adminKey string, req CreateRequest) (*CreateResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var resp CreateResponse
	if err := callAPI(ctx, hc, http.MethodPost, base+PathMatches, adminKey, body, http.StatusCreated, "create match", &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
