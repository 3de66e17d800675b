package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMatchOfASimThePlayPageCannotPlayGetsAWatchLinkAndNoPlayLinks(t *testing.T) {
	watch, play, err := Links("ws://127.0.0.1:7400/v1/ws", "/v1/ws", "gridcoin", "s", []string{"p1", "p2"})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:7400/watch#token=s", watch)
	assert.Empty(t, play, "the play page has orders for skirmish only")
}

func TestTheRelaysModulesAreServedByNameWithTheirList(t *testing.T) {
	h := ModuleHandler(map[string][]byte{"grid.wasm": []byte("\x00asm grid"), "b.wasm": []byte("\x00asm b")})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	rec := get(ModulesPath + "index.json")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `["b.wasm","grid.wasm"]`, rec.Body.String())
	rec = get(ModulesPath + "grid.wasm")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/wasm", rec.Header().Get("Content-Type"))
	assert.Equal(t, "\x00asm grid", rec.Body.String())
	for _, p := range []string{ModulesPath + "nope.wasm", ModulesPath + "../web.go", ModulesPath} {
		assert.Equal(t, http.StatusNotFound, get(p).Code, p)
	}
	rec = httptest.NewRecorder()
	ModuleHandler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ModulesPath+"index.json", nil))
	assert.JSONEq(t, `[]`, rec.Body.String(), "a relay without a sim directory lists none")
}

func TestThePagesAloneListNoModulesOfTheirOwn(t *testing.T) {
	rec := httptest.NewRecorder()
	handler(pages(true)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ModulesPath+"index.json", nil))
	require.Equal(t, http.StatusOK, rec.Code, "a page's fetch of the list is never a 404 in its console")
	assert.JSONEq(t, `[]`, rec.Body.String())
}
