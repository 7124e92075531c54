# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# Zlib on Node's zlib module: Opal has none, and Rack::Deflater streams gzip through
# Zlib::GzipWriter. The writer drives a Node Gzip stream synchronously with _processChunk
# (what Node's own zlib.gzipSync uses), so `flush` really emits the compressed bytes so far.
module Zlib
  class Error < StandardError; end
  class BufError < Error; end
  class DataError < Error; end
  class GzipFile
    class Error < Zlib::Error; end
  end

  NO_FLUSH = 0
  SYNC_FLUSH = 2
  FULL_FLUSH = 3
  FINISH = 4
  DEFAULT_COMPRESSION = -1
  BEST_SPEED = 1
  BEST_COMPRESSION = 9

  def self.__node = `require('zlib')`

  def self.__call(fn, str)
    RackCompat::Bytes.from_buffer(`#{__node}[fn](#{RackCompat::Bytes.to_buffer(str)})`)
  rescue JS::Error => e
    raise DataError, `#{e}.message`
  end

  def self.gzip(str, level: nil, strategy: nil) = __call('gzipSync', str)
  def self.gunzip(str) = __call('gunzipSync', str)

  def self.crc32(str = nil, crc = 0)
    RackCompat::Bytes.bytes(str.to_s).each do |b|
      crc ^= 0xffffffff
      crc ^= b
      8.times { crc = (crc & 1) == 1 ? (crc >> 1) ^ 0xedb88320 : crc >> 1 }
      crc ^= 0xffffffff
    end
    `#{crc} >>> 0`
  end

  class Deflate
    def self.deflate(str, level = DEFAULT_COMPRESSION) = Zlib.__call('deflateSync', str)
  end

  class Inflate
    def self.inflate(str) = Zlib.__call('inflateSync', str)
  end

  # Writes gzip data to `io` (anything with #write) as it is produced.
  class GzipWriter
    attr_accessor :mtime, :orig_name, :comment

    def initialize(io, level = nil, strategy = nil, **)
      @io = io
      @stream = `require('zlib').createGzip()`
      @header_done = false
      @mtime = nil
      @closed = false
    end

    def write(*strings)
      strings.sum do |s|
        s = s.to_s
        emit(`#{@stream}._processChunk(#{RackCompat::Bytes.to_buffer(s)}, #{NO_FLUSH})`)
        s.bytesize
      end
    end

    def <<(str)
      write(str)
      self
    end

    def flush(flush = SYNC_FLUSH)
      emit(`#{@stream}._processChunk(Buffer.alloc(0), #{flush})`)
      self
    end

    def finish
      emit(`#{@stream}._processChunk(Buffer.alloc(0), #{FINISH})`)
      @closed = true
      @io
    end

    def close
      io = finish
      io.close if io.respond_to?(:close)
      io
    end

    def closed? = @closed

    private

    # Hands a chunk of output to the io; the first one carries the 10-byte gzip header, whose
    # MTIME field (RFC 1952 §2.3.1, bytes 4..7, little-endian) Node always leaves at 0.
    def emit(buf)
      return if `#{buf} == null || #{buf}.length == 0`

      unless @header_done
        `#{buf}.writeUInt32LE(#{@mtime.to_i} >>> 0, 4)` if @mtime
        @header_done = true
      end
      @io.write(RackCompat::Bytes.from_buffer(buf))
    end
  end

  # Reads a whole gzip stream from `io` (anything with #read).
  class GzipReader
    def self.wrap(io)
      gz = new(io)
      block_given? ? yield(gz) : gz
    end

    def initialize(io, **)
      @data = Zlib.gunzip(io.read)
      @pos = 0
    end

    def read(len = nil)
      return @data[@pos..] .tap { @pos = @data.length } if len.nil?
      return nil if @pos >= @data.length

      chunk = @data[@pos, len]
      @pos += len
      chunk
    end

    def close; end
  end
end
