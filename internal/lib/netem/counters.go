package netem

// TCPCounters are a namespace's TCP counters (from /proc/net/snmp and netstat, of the
// namespace): what the loss cost in retransmissions, and how many were for nothing.
type TCPCounters struct {
	OutSegs      int64 `json:"out_segs"`
	RetransSegs  int64 `json:"retrans_segs"`
	FastRetrans  int64 `json:"fast_retrans"`  // TCPFastRetrans: recovered by (S)ACKs
	Timeouts     int64 `json:"timeouts"`      // TCPTimeouts: recovered by the timer
	LossProbes   int64 `json:"loss_probes"`   // TCPLossProbes: tail loss probes sent
	SpuriousRTOs int64 `json:"spurious_rtos"` // TCPSpuriousRTOs: timeouts found needless (F-RTO)
	DSACKRecv    int64 `json:"dsack_recv"`    // TCPDSACKRecv: the peer got a segment twice
}

// Sub is c − b, counter by counter.
func (c TCPCounters) Sub(b TCPCounters) TCPCounters {
	return TCPCounters{c.OutSegs - b.OutSegs, c.RetransSegs - b.RetransSegs, c.FastRetrans - b.FastRetrans,
		c.Timeouts - b.Timeouts, c.LossProbes - b.LossProbes, c.SpuriousRTOs - b.SpuriousRTOs, c.DSACKRecv - b.DSACKRecv}
}

// Add is c + b.
func (c TCPCounters) Add(b TCPCounters) TCPCounters {
	return c.Sub(TCPCounters{}.Sub(b))
}
