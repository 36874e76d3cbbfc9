package cluster

import "encoding/json"

// RecordJSON returns the node's entry in the machine-wide registry.
func (n *RealNode) RecordJSON() ([]byte, error) { return json.Marshal(n.host) }

// LeftoversOf lists what the node whose registry entry is rec left on the
// machine, as Leftovers does.
func LeftoversOf(rec []byte) ([]string, error) {
	var r nodeRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, err
	}
	n := &RealNode{Dir: r.Dir, Bridge: r.Bridge, CgroupRoot: r.CgroupRoot, host: r}
	return n.Leftovers(), nil
}
