# frozen_string_literal: true
# backtick_javascript: true

require 'stringio'

# Tempfile on Node: Opal has none, and Rack keeps multipart uploads and rewindable input in
# one. The bytes live in memory (a StringIO, one character per byte) for reads; every write
# is also mirrored into a real file under the OS temp dir, so `path` works for apps that
# copy or reopen the upload. `unlink`/`close!` remove the file.
class Tempfile < StringIO
  def self.create(basename = '', tmpdir = nil, **options)
    file = new(basename, tmpdir, **options)
    return file unless block_given?

    begin
      yield file
    ensure
      file.close!
    end
  end

  def self.open(*args, **kw)
    file = new(*args, **kw)
    return file unless block_given?

    begin
      yield file
    ensure
      file.close
    end
  end

  attr_reader :path

  def initialize(basename = '', tmpdir = nil, mode: 0, **options)
    super(+'', 'rw')
    prefix, suffix = basename.is_a?(Array) ? basename : [basename, '']
    dir = tmpdir || `require('os').tmpdir()`
    name = "#{prefix}#{Time.now.strftime('%Y%m%d')}-#{`process.pid`}-#{rand(0x100000000).to_s(36)}#{suffix}"
    @path = `require('path').join(dir, name)`
    @fd = `require('fs').openSync(#{@path}, 'w+', 0o600)`
  end

  # Mirrors `string` to the file as bytes (a binary string is one byte per character,
  # anything else is written as UTF-8), then appends it to the in-memory copy.
  def write(*strings)
    strings.sum do |s|
      s = s.to_s
      if @fd
        enc = s.encoding.binary? ? 'latin1' : 'utf8'
        `require('fs').writeSync(#{@fd}, Buffer.from(#{s}.toString(), #{enc}))`
      end
      super(s)
      s.bytesize
    end
  end

  def <<(string)
    write(string)
    self
  end

  def print(*strings)
    write(*strings)
    nil
  end

  def binmode
    self
  end

  def binmode?
    true
  end

  def flush
    self
  end

  def fsync
    0
  end

  def size
    string.length
  end
  alias length size

  def close(unlink_now = false)
    `require('fs').closeSync(#{@fd})` if @fd
    @fd = nil
    @closed = true
    unlink if unlink_now
    nil
  end

  def closed?
    @closed || false
  end

  def close!
    close(true)
  end

  def unlink
    return unless @path

    `try { require('fs').unlinkSync(#{@path}) } catch (e) {}`
    @path = nil
  end
  alias delete unlink

  def open
    @closed = false
    rewind
    self
  end

  def inspect
    "#<Tempfile:#{@path}>"
  end
end
