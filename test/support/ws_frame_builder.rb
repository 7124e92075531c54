# frozen_string_literal: true

require "securerandom"

# Builds the bytes of one client frame (RFC 6455 §5.2), including the ones no real client sends:
# any opcode (reserved ones too), any RSV bits, FIN clear on a control frame, no mask, a length
# in a longer form than needed, or a declared length other than the payload's (a header sent
# ahead of its payload, or a length past any limit). Used by the wire conformance cases
# (test/support/ws_wire_case.rb); WSClient#frame_bytes covers what well-behaved tests send.
module WSFrameBuilder
  OPCODES = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 }.freeze

  module_function

  # The frame's bytes. opcode: a name of OPCODES or 0..15; rsv: the three RSV bits as 0..7
  # (4 is RSV1); length: the declared payload length (default: the payload's); width: the
  # length field's form, :min (shortest), 16 or 64; key: the 4-byte masking key (default
  # random), or nil with masked: false.
  def frame(opcode, payload = "", fin: true, rsv: 0, masked: true, length: nil, width: :min, key: nil)
    payload = payload.b
    op = opcode.is_a?(Symbol) ? OPCODES.fetch(opcode) : opcode
    raise ArgumentError, "opcode #{op}" unless (0..15).cover?(op)
    raise ArgumentError, "rsv #{rsv}" unless (0..7).cover?(rsv)

    length ||= payload.bytesize
    head = [(fin ? 0x80 : 0) | rsv << 4 | op].pack("C") + length_field(length, width, masked ? 0x80 : 0)
    return head + payload unless masked

    key ||= SecureRandom.bytes(4)
    head + key + mask(payload, key)
  end

  # The second byte of the header and the extended length, if any.
  def length_field(length, width, mask_bit)
    width = length < 126 ? 7 : length < 65_536 ? 16 : 64 if width == :min
    case width
    when 7 then [mask_bit | length].pack("C")
    when 16 then [mask_bit | 126, length].pack("Cn")
    when 64 then [mask_bit | 127, length].pack("CQ>")
    else raise ArgumentError, "width #{width}"
    end
  end

  # payload XOR the key repeated (§5.3), as one big-integer operation: a 16 MiB payload costs
  # milliseconds, not the seconds a loop over its bytes would.
  def mask(payload, key)
    return payload if payload.empty?

    n = payload.bytesize
    stream = (key * ((n + 3) / 4)).byteslice(0, n)
    x = payload.unpack1("H*").to_i(16) ^ stream.unpack1("H*").to_i(16)
    [x.to_s(16).rjust(n * 2, "0")].pack("H*")
  end

  # bytes read back as frames, for failure messages: `fin op=1 rsv=0 "hello"` for each whole
  # frame (payload unmasked, long ones cut), then the hex of what is left of a cut frame.
  def describe(bytes)
    out = []
    pos = 0
    while (frame = parse(bytes, pos))
      op, fin, rsv, masked, payload, size = frame
      shown = payload.bytesize > 32 ? "#{payload.byteslice(0, 32).inspect}...(#{payload.bytesize} bytes)" : payload.inspect
      out << "#{fin ? "fin" : "more"} op=#{op} rsv=#{rsv}#{masked ? "" : " unmasked"} #{shown}"
      pos += size
    end
    rest = bytes.byteslice(pos..)
    out << "bytes #{rest.byteslice(0, 24).unpack1("H*")}#{rest.bytesize > 24 ? "...(#{rest.bytesize})" : ""}" unless rest.empty?
    out.join(", ")
  end

  # The whole frame at bytes[pos..] as [opcode, fin, rsv, masked, payload, size], or nil.
  def parse(bytes, pos)
    return nil if bytes.bytesize - pos < 2

    b0, b1 = bytes.byteslice(pos, 2).unpack("CC")
    ext = { 126 => 2, 127 => 8 }.fetch(b1 & 0x7f, 0)
    key_len = (b1 & 0x80).zero? ? 0 : 4
    head = 2 + ext + key_len
    return nil if bytes.bytesize - pos < head

    len = ext.zero? ? b1 & 0x7f : bytes.byteslice(pos + 2, ext).unpack1(ext == 2 ? "n" : "Q>")
    return nil if bytes.bytesize - pos - head < len

    payload = bytes.byteslice(pos + head, len)
    payload = mask(payload, bytes.byteslice(pos + head - 4, 4)) if key_len.positive?
    [b0 & 0x0f, (b0 & 0x80) != 0, (b0 >> 4) & 7, key_len.positive?, payload, head + len]
  end

  # A Close payload: the code in network order, then the reason.
  def close_payload(code, reason = "")
    [code].pack("n") + reason.b
  end
end
