//go:build !linux

package mapappend

import (
	"errors"
	"os"
)

// Other platforms append with write calls only (see the package doc).
const supported = false

func grow(*os.File, int64, int64) error { return errors.ErrUnsupported }

func mapWindow(*os.File, int64, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapWindow([]byte) {}

func prefault([]byte) {}
