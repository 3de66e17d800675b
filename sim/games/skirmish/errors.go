package skirmish

import "errors"

// ErrBadSnapshot means bytes given to Restore are not a skirmish snapshot this version
// can load; the game is left unchanged.
var ErrBadSnapshot = errors.New("skirmish: bad snapshot")
