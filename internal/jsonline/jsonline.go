// Package jsonline says on which line of a JSON document a decoding error
// stands.
package jsonline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Line is the line (from 1) of data at which a JSON syntax or type error
// stands; false for any other error, or an offset outside data.
func Line(data []byte, err error) (int, bool) {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return 0, false
	}
	return 1 + bytes.Count(data[:off], []byte("\n")), true
}

// Wrap adds the line of a JSON syntax or type error in data ("line 3: …");
// an error Line cannot place is returned as it is.
func Wrap(data []byte, err error) error {
	if line, ok := Line(data, err); ok {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}
