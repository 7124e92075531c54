# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# Zlib on Node's zlib module: Opal has none, and Rack::Deflater streams gzip through
# Zlib::GzipWriter. Node 20 is needed (zlib.crc32 arrived in 20.15).
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
  rescue Opal::Raw::Error => e
    raise DataError, `#{e}.message`
  end

  def self.gzip(str, level: nil, strategy: nil) = __call('gzipSync', str)
  def self.gunzip(str) = __call('gunzipSync', str)

  def self.crc32(str = nil, crc = 0)
    `require('zlib').crc32(#{RackCompat::Bytes.to_buffer(str.to_s)}, #{crc})`
  end

  class Deflate
    def self.deflate(str, level = DEFAULT_COMPRESSION) = Zlib.__call('deflateSync', str)
  end

  class Inflate
    def self.inflate(str) = Zlib.__call('inflateSync', str)
  end

  # Writes gzip data (RFC 1952) to `io` (anything with #write). Node's zlib has no
  # synchronous stream, so the writer frames the member itself: its header, then deflate
  # data, then CRC32 and length. Writes are buffered; each #flush compresses what is
  # buffered into non-final deflate blocks ending in a sync-flush marker and hands them to
  # `io` (so Rack::Deflater streams), and #finish adds the final block and the trailer.
  # Deflate blocks compressed separately concatenate into one valid stream.
  class GzipWriter
    OS_UNIX = 3

    attr_accessor :mtime, :orig_name, :comment, :level

    def initialize(io, level = nil, strategy = nil, **)
      @io = io
      @level = level
      @pending = []
      @crc = 0
      @size = 0
      @header_done = false
      @mtime = nil
      @closed = false
    end

    def write(*strings)
      strings.sum do |s|
        buf = RackCompat::Bytes.to_buffer(s.to_s)
        @pending << buf
        @crc = `require('zlib').crc32(#{buf}, #{@crc})`
        @size += `#{buf}.length`
        `#{buf}.length`
      end
    end

    def <<(str)
      write(str)
      self
    end

    def flush(flush = SYNC_FLUSH)
      emit(deflate(`require('zlib').constants.Z_SYNC_FLUSH`)) unless flush == NO_FLUSH
      self
    end

    def finish
      emit(deflate(`require('zlib').constants.Z_FINISH`))
      trailer = `Buffer.alloc(8)`
      `#{trailer}.writeUInt32LE(#{@crc} >>> 0, 0)`
      `#{trailer}.writeUInt32LE(#{@size} % 4294967296, 4)`
      @io.write(RackCompat::Bytes.from_buffer(trailer))
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

    # Raw deflate blocks for the buffered input, ended by `flush_flag`.
    def deflate(flush_flag)
      input = `Buffer.concat(#{@pending})`
      @pending = []
      level = @level || DEFAULT_COMPRESSION
      `require('zlib').deflateRawSync(#{input}, { finishFlush: #{flush_flag}, level: #{level} })`
    end

    # Hands compressed bytes to the io, after the 10-byte member header the first time
    # (RFC 1952 §2.3: ID1 ID2 CM=8 FLG=0 MTIME(le32) XFL=0 OS).
    def emit(buf)
      unless @header_done
        header = `Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, #{OS_UNIX}])`
        `#{header}.writeUInt32LE(#{@mtime.to_i} >>> 0, 4)`
        @io.write(RackCompat::Bytes.from_buffer(header))
        @header_done = true
      end
      @io.write(RackCompat::Bytes.from_buffer(buf)) if `#{buf}.length > 0`
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
