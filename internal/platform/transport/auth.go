package transport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/quic-go/quic-go"

	"github.com/skulk/skulk/internal/platform/ids"
)

// The cluster proof runs on the first bidirectional stream, which the dialler
// opens right after the TLS handshake:
//
//	dialler -> listener  hello: "SKLK" | 0x01 | len(nv) | nv | HMAC(k, "skulk client proof" || ekm)
//	listener -> dialler  reply: "SKLK" | 0x01 | len(nv) | nv | HMAC(k, "skulk server proof" || ekm)
//	dialler -> listener  ack:   0x01
//
// k = clusterkey.Derive("transport"), bound to (cluster key, network
// version); ekm is 32 bytes of TLS keying material exported under
// exporterLabel, which binds the proof to this TLS session (no replay). nv is
// sent in clear so that a version mismatch is named as such. Any failure
// closes the connection with an application error code and a reason, so the
// refused side learns why.
const (
	helloMagic    = "SKLK"
	helloVersion  = 1
	exporterLabel = "EXPORTER-skulk-cluster-proof"
	clientLabel   = "skulk client proof"
	serverLabel   = "skulk server proof"
	ackByte       = 1
)

func (e *Endpoint) proof(label string, ekm []byte) [32]byte {
	m := hmac.New(sha256.New, e.proofKey[:])
	m.Write([]byte(label))
	m.Write(ekm)
	var out [32]byte
	copy(out[:], m.Sum(nil))
	return out
}

func appendHello(b []byte, nv string, proof [32]byte) []byte {
	b = append(b, helloMagic...)
	b = append(b, helloVersion, byte(len(nv)))
	b = append(b, nv...)
	return append(b, proof[:]...)
}

func readHello(r io.Reader) (nv string, proof [32]byte, err error) {
	var hdr [6]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return "", proof, err
	}
	if string(hdr[:4]) != helloMagic || hdr[4] != helloVersion {
		return "", proof, fmt.Errorf("%w: bad hello header %x", ErrProtocol, hdr)
	}
	v := make([]byte, hdr[5])
	if _, err = io.ReadFull(r, v); err != nil {
		return "", proof, err
	}
	if _, err = io.ReadFull(r, proof[:]); err != nil {
		return "", proof, err
	}
	return string(v), proof, nil
}

// authenticate runs the cluster proof and VerifyPeer on a fresh QUIC
// connection. want is the node the dialler expects ("" when inbound). On
// failure the connection is closed with the reason and a *RefusedError is
// returned.
func (e *Endpoint) authenticate(ctx context.Context, qc *quic.Conn, inbound bool, want ids.NodeID) (*Conn, error) {
	stop := context.AfterFunc(ctx, func() { qc.CloseWithError(CodeShutdown, "handshake timed out or cancelled") })
	defer stop()
	addr := qc.RemoteAddr().String()
	st := qc.ConnectionState().TLS
	raw := make([][]byte, len(st.PeerCertificates))
	for i, c := range st.PeerCertificates {
		raw[i] = c.Raw
	}
	node, key, err := peerIdentity(raw)
	if err != nil {
		return nil, e.refuse(qc, addr, "", err, "")
	}
	if want != "" && node != want {
		return nil, e.refuse(qc, addr, node, ErrPeerRejected, fmt.Sprintf("dialled node %s but the certificate names %s", want, node))
	}
	ekm, err := st.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, e.refuse(qc, addr, node, ErrProtocol, err.Error())
	}
	deadline, _ := ctx.Deadline()
	var s *quic.Stream
	if inbound {
		s, err = qc.AcceptStream(ctx)
	} else {
		s, err = qc.OpenStreamSync(ctx)
	}
	if err != nil {
		return nil, e.handshakeIOError(qc, addr, node, err)
	}
	s.SetDeadline(deadline)
	mine, theirs := clientLabel, serverLabel
	if inbound {
		mine, theirs = serverLabel, clientLabel
	}
	check := func() error {
		nv, got, err := readHello(s)
		if err != nil {
			return e.handshakeIOError(qc, addr, node, err)
		}
		if ours := e.cfg.ClusterKey.NetworkVersion(); nv != ours {
			return e.refuse(qc, addr, node, ErrNetworkVersion, fmt.Sprintf("peer speaks %q, we speak %q", nv, ours))
		}
		if expect := e.proof(theirs, ekm); !hmac.Equal(got[:], expect[:]) {
			return e.refuse(qc, addr, node, ErrClusterMismatch, "cluster proof does not verify")
		}
		if err := e.cfg.VerifyPeer(node, key); err != nil {
			return e.refuse(qc, addr, node, ErrPeerRejected, err.Error())
		}
		return nil
	}
	hello := appendHello(nil, e.cfg.ClusterKey.NetworkVersion(), e.proof(mine, ekm))
	if inbound {
		if err := check(); err != nil {
			return nil, err
		}
		if _, err := s.Write(hello); err != nil {
			return nil, e.handshakeIOError(qc, addr, node, err)
		}
		var ack [1]byte
		if _, err := io.ReadFull(s, ack[:]); err != nil {
			return nil, e.handshakeIOError(qc, addr, node, err)
		}
		if ack[0] != ackByte {
			return nil, e.refuse(qc, addr, node, ErrProtocol, "bad handshake ack")
		}
	} else {
		if _, err := s.Write(hello); err != nil {
			return nil, e.handshakeIOError(qc, addr, node, err)
		}
		if err := check(); err != nil {
			return nil, err
		}
		if _, err := s.Write([]byte{ackByte}); err != nil {
			return nil, e.handshakeIOError(qc, addr, node, err)
		}
	}
	s.Close()
	s.CancelRead(0)
	return newConn(qc, node, key, inbound), nil
}

// refuse closes qc with reason's code and returns the local *RefusedError.
func (e *Endpoint) refuse(qc *quic.Conn, addr string, node ids.NodeID, reason error, detail string) error {
	msg := reason.Error()
	if detail != "" {
		msg += ": " + detail
	}
	qc.CloseWithError(codeFor(reason), msg)
	return &RefusedError{Addr: addr, Peer: node, Reason: reason, Detail: detail}
}

// handshakeIOError turns a failed read or write during the proof into an
// error: a *RefusedError with Remote set when the peer closed the connection
// with one of our codes, else a protocol error.
func (e *Endpoint) handshakeIOError(qc *quic.Conn, addr string, node ids.NodeID, err error) error {
	if re := remoteRefusal(err); re != nil {
		re.Addr, re.Peer = addr, node
		return re
	}
	qc.CloseWithError(CodeProtocol, "handshake failed")
	return &RefusedError{Addr: addr, Peer: node, Reason: ErrProtocol, Detail: err.Error()}
}

// tlsNoALPN is the QUIC CRYPTO_ERROR for the TLS no_application_protocol
// alert (0x100 + 120).
const tlsNoALPN quic.TransportErrorCode = 0x100 + 120

// remoteRefusal maps an error that carries the peer's close into a
// *RefusedError with Remote set, or nil.
func remoteRefusal(err error) *RefusedError {
	var ae *quic.ApplicationError
	if errors.As(err, &ae) && ae.Remote && ae.ErrorCode != CodeNormal {
		return &RefusedError{Remote: true, Reason: reasonFor(ae.ErrorCode), Detail: ae.ErrorMessage}
	}
	var te *quic.TransportError
	if errors.As(err, &te) && te.Remote && te.ErrorCode == tlsNoALPN {
		return &RefusedError{Remote: true, Reason: ErrNoHandler, Detail: "the peer does not speak this ALPN"}
	}
	return nil
}
