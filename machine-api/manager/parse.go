package manager

import (
	"fmt"
	"strconv"
)

func parseFloat32(s string, into *float32) error {
	f, err := strconv.ParseFloat(s, 32)
	if err != nil || f <= 0 {
		return fmt.Errorf("want a positive number, got %q", s)
	}
	*into = float32(f)
	return nil
}
