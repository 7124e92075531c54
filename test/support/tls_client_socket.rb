# frozen_string_literal: true

require "io/wait"
require "openssl"
require "socket"

# A TLS client connection for tests that read and write it as they do a TCPSocket (the
# conformance suite over TLS, test/conformance/helper.rb): connected and verified for
# localhost on creation, closing its TCP socket with it, with what a TCPSocket has and the
# SSLSocket of Ruby 3.1's openssl gem (3.0) lacks: #wait_readable and #close_write.
class TLSClientSocket < OpenSSL::SSL::SSLSocket
  # Connects to 127.0.0.1:port and completes the handshake; raises when the server's
  # certificate does not verify against context for localhost.
  def self.open(port, context)
    ssl = new(TCPSocket.new("127.0.0.1", port), context)
    ssl.sync_close = true
    ssl.hostname = "localhost"
    begin
      ssl.connect
    rescue StandardError
      ssl.close
      raise
    end
    ssl
  end

  # True at once when a record already read holds data, else when the socket becomes
  # readable within timeout seconds (the bytes may then be a record without data, such as a
  # TLS 1.3 session ticket: read_nonblock answers :wait_readable to those).
  def wait_readable(timeout = nil)
    pending.positive? || !to_io.wait_readable(timeout).nil?
  end

  # Sends close_notify: under TLS 1.3 the connection stays open for reading, as after a
  # TCP half-close (RFC 8446 §6.1); TLS 1.2 has no half-close.
  def close_write
    stop
  end
end
