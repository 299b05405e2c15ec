package openai

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/valyala/fastjson"
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

// decoder decodes chunks without allocating on the hot path: fastjson's
// validator checks the chunk, its parser (reused from chunk to chunk)
// builds the tree, from which the few fields the client needs are read.
// encoding/json's scanner stays the judge where fastjson's validator is
// laxer than JSON (control characters in strings: see strictValid) and
// gives the message, with its offset, of a chunk that is not valid.
type decoder struct {
	p fastjson.Parser
	v chunkView
}

var errNotObject = errors.New("chunk is not a JSON object")

func (d *decoder) decode(data []byte) (*chunkView, error) {
	v := &d.v
	*v = chunkView{text: v.text[:0], finish: v.finish[:0]}
	if err := fastjson.ValidateBytes(data); err != nil || !strictValid(data) {
		return nil, invalidJSON(data, err)
	}
	root, err := d.p.ParseBytes(data)
	if err != nil {
		return nil, invalidJSON(data, err)
	}
	o, err := root.Object()
	if err != nil {
		return nil, errNotObject
	}
	if m := o.Get("model"); m != nil && m.Type() == fastjson.TypeString {
		v.model, _ = m.StringBytes()
	}
	if c := o.Get("choices"); c != nil && c.Type() == fastjson.TypeArray {
		arr, _ := c.Array()
		for _, ch := range arr {
			if ch.Type() == fastjson.TypeObject {
				d.choice(ch)
			}
		}
	}
	if u := o.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		v.usage = true
		if err := d.usage(u); err != nil {
			return nil, err
		}
	}
	if e := o.Get("error"); e != nil {
		switch e.Type() {
		case fastjson.TypeObject:
			v.err = true
			if m := e.Get("message"); m != nil && m.Type() == fastjson.TypeString {
				b, _ := m.StringBytes()
				v.errMsg = string(b)
			} else {
				v.errMsg = string(e.MarshalTo(nil))
			}
		case fastjson.TypeString:
			v.err = true
			b, _ := e.StringBytes()
			v.errMsg = string(b)
		}
	}
	return v, nil
}

// choice reads one element of choices: text (completions), delta.content
// (chat), reasoning content and the finish reason.
func (d *decoder) choice(ch *fastjson.Value) {
	v := &d.v
	if s := str(ch.Get("text")); len(s) > 0 {
		v.text = append(v.text, s...)
	}
	if delta := ch.Get("delta"); delta != nil && delta.Type() == fastjson.TypeObject {
		if s := str(delta.Get("content")); len(s) > 0 {
			v.text = append(v.text, s...)
		}
		v.reasoning += len(str(delta.Get("reasoning_content"))) + len(str(delta.Get("reasoning")))
	}
	if s := str(ch.Get("finish_reason")); len(s) > 0 {
		v.finish = append(v.finish[:0], s...)
	}
}

// usage reads the server's token counts. A count that is not a
// non-negative integer of at most MaxUsageTokens (a string such as "NaN",
// a fraction, a negative or absurd number), or a usage without
// completion_tokens, is a *UsageError: the engine's usage is not trusted.
func (d *decoder) usage(u *fastjson.Value) error {
	c := u.Get("completion_tokens")
	if c == nil || c.Type() == fastjson.TypeNull {
		return &UsageError{Field: "completion_tokens", Value: "absent"}
	}
	var err error
	d.v.prompt, err = count(u.Get("prompt_tokens"), "prompt_tokens", err)
	d.v.complete, err = count(c, "completion_tokens", err)
	d.v.reasonTok, err = count(u.Get("completion_tokens_details", "reasoning_tokens"), "reasoning_tokens", err)
	return err
}

// count is n as an int (0 when absent or null); the first error sticks.
func count(n *fastjson.Value, name string, err error) (int, error) {
	if n == nil || n.Type() == fastjson.TypeNull {
		return 0, err
	}
	x, ok := usageCount(n)
	if !ok && err == nil {
		err = &UsageError{Field: name, Value: truncate(n.MarshalTo(nil), 64)}
	}
	return x, err
}

// usageCount is n as a token count: a JSON number whose value is an
// integer in [0, MaxUsageTokens] (1e3 and 3.0 are taken, 3.5 is not).
func usageCount(n *fastjson.Value) (int, bool) {
	if n.Type() != fastjson.TypeNumber {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > MaxUsageTokens || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// str is v's unescaped string, or nil when v is absent or not a string.
func str(v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	b, _ := v.StringBytes()
	return b
}

// strictValid catches what fastjson's validator lets through but JSON
// forbids: control characters inside strings. Chunks without any byte
// below 0x20 (every chunk a real engine sends) pass with one scan; the
// others go to encoding/json.
func strictValid(data []byte) bool {
	for _, c := range data {
		if c < 0x20 {
			return json.Valid(data)
		}
	}
	return true
}

// invalidJSON is encoding/json's own message, with the offset; failing
// that (what fastjson refuses and encoding/json takes, such as nesting
// deeper than 300), fastjson's.
func invalidJSON(data []byte, ferr error) error {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	return errors.New("invalid JSON")
}
