package partition

import (
	"encoding/binary"
	"fmt"
)

// encodePairs encodes a scan page: each key and value as a uvarint length
// and its bytes.
func encodePairs(pairs [][2][]byte) []byte {
	var b []byte
	for _, p := range pairs {
		b = binary.AppendUvarint(b, uint64(len(p[0])))
		b = append(b, p[0]...)
		b = binary.AppendUvarint(b, uint64(len(p[1])))
		b = append(b, p[1]...)
	}
	return b
}

// decodePairs decodes a scan page; the pairs alias b.
func decodePairs(b []byte) ([][2][]byte, error) {
	var out [][2][]byte
	for len(b) > 0 {
		var p [2][]byte
		for i := range p {
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return nil, fmt.Errorf("partition: malformed scan page")
			}
			p[i] = b[k : k+int(n)]
			b = b[k+int(n):]
		}
		out = append(out, p)
	}
	return out, nil
}
