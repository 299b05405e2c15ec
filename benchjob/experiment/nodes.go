package experiment

import "go.yaml.in/yaml/v3"

// mergeAll merges mapping nodes left to right into a fresh tree: a later
// layer's key replaces an earlier one's, except that two mappings merge key
// by key. Lists are replaced whole. The inputs are not modified, so a base
// shared by many runs stays intact. nil and null layers are skipped.
func mergeAll(layers []*yaml.Node) *yaml.Node {
	var out *yaml.Node
	for _, l := range layers {
		if l == nil || isNull(l) {
			continue
		}
		if out == nil {
			out = clone(l)
			continue
		}
		out = merge(out, l)
	}
	return out
}

// merge merges src into dst (dst is owned and modified) and returns dst.
func merge(dst, src *yaml.Node) *yaml.Node {
	if dst.Kind != yaml.MappingNode || src.Kind != yaml.MappingNode {
		return clone(src)
	}
	for i := 0; i < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		found := false
		for j := 0; j < len(dst.Content); j += 2 {
			if dst.Content[j].Value == k.Value {
				dst.Content[j+1] = merge(dst.Content[j+1], v)
				found = true
				break
			}
		}
		if !found {
			dst.Content = append(dst.Content, clone(k), clone(v))
		}
	}
	return dst
}

func clone(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = clone(x)
		}
	}
	return &c
}

// pathNode builds {p0: {p1: ... value}} keeping value's line for errors.
func pathNode(path []string, value *yaml.Node) *yaml.Node {
	n := value
	for i := len(path) - 1; i >= 0; i-- {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: value.Line, Column: value.Column, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[i], Line: value.Line, Column: value.Column}, n,
		}}
	}
	return n
}
