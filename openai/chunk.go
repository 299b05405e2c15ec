package openai

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/buger/jsonparser"
)

// chunkView is what one streamed object holds that the client uses. Byte
// slices are valid until the next decode.
type chunkView struct {
	model     []byte
	text      []byte // content of every choice, unescaped
	reasoning int    // bytes of reasoning content (reasoning_content or reasoning)
	finish    []byte
	usage     bool
	prompt    int
	complete  int
	reasonTok int
	err       bool
	errMsg    string
}

var (
	chunkPaths  = [][]string{{"model"}, {"choices"}, {"usage"}, {"error"}}
	choicePaths = [][]string{{"text"}, {"delta", "content"}, {"delta", "reasoning_content"}, {"delta", "reasoning"}, {"finish_reason"}}
	usagePaths  = [][]string{{"prompt_tokens"}, {"completion_tokens"}, {"completion_tokens_details", "reasoning_tokens"}}
)

// decoder decodes chunks without allocating on the hot path: the object is
// validated by encoding/json's scanner (pooled), then the few fields the
// client needs are read with jsonparser.
type decoder struct {
	v       chunkView
	scratch []byte
	err     error
}

var errNotObject = errors.New("chunk is not a JSON object")

func (d *decoder) decode(data []byte) (*chunkView, error) {
	v := &d.v
	*v = chunkView{text: v.text[:0]}
	if !json.Valid(data) {
		var x any
		err := json.Unmarshal(data, &x) // the scanner's own message, with the offset
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, errNotObject
	}
	d.err = nil
	jsonparser.EachKey(data, d.onChunk, chunkPaths...)
	return v, d.err
}

func (d *decoder) onChunk(idx int, val []byte, vt jsonparser.ValueType, err error) {
	if err != nil {
		d.err = err
		return
	}
	v := &d.v
	switch idx {
	case 0:
		if vt == jsonparser.String {
			v.model = val
		}
	case 1:
		if vt == jsonparser.Array {
			_, aerr := jsonparser.ArrayEach(val, func(c []byte, ct jsonparser.ValueType, _ int, err error) {
				if err == nil && ct == jsonparser.Object {
					jsonparser.EachKey(c, d.onChoice, choicePaths...)
				}
			})
			if aerr != nil {
				d.err = aerr
			}
		}
	case 2:
		if vt == jsonparser.Object {
			v.usage = true
			jsonparser.EachKey(val, d.onUsage, usagePaths...)
		}
	case 3:
		switch vt {
		case jsonparser.Object:
			v.err = true
			if m, err := jsonparser.GetString(val, "message"); err == nil {
				v.errMsg = m
			} else {
				v.errMsg = string(val)
			}
		case jsonparser.String:
			v.err = true
			v.errMsg = string(val)
		}
	}
}

func (d *decoder) onChoice(idx int, val []byte, vt jsonparser.ValueType, err error) {
	if err != nil || vt != jsonparser.String || len(val) == 0 {
		return
	}
	v := &d.v
	u, uerr := jsonparser.Unescape(val, d.scratch[:cap(d.scratch)])
	if uerr != nil {
		d.err = uerr
		return
	}
	if cap(u) > cap(d.scratch) {
		d.scratch = u[:0]
	}
	switch idx {
	case 0, 1:
		v.text = append(v.text, u...)
	case 2, 3:
		v.reasoning += len(u)
	case 4:
		v.finish = append(v.finish[:0], u...)
	}
}

func (d *decoder) onUsage(idx int, val []byte, vt jsonparser.ValueType, err error) {
	if err != nil || vt != jsonparser.Number {
		return
	}
	n, perr := strconv.Atoi(string(val))
	if perr != nil {
		d.err = perr
		return
	}
	switch idx {
	case 0:
		d.v.prompt = n
	case 1:
		d.v.complete = n
	case 2:
		d.v.reasonTok = n
	}
}
