# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# Tempfile on Node: Opal has none, and Rack keeps multipart uploads (and rewindable input)
# in one. A real file under the OS temp dir, opened read-write, with its own position:
# writes and reads go through fs.writeSync/readSync, so uploads never sit in memory and
# `path` works for apps that copy or reopen the file. Reads return binary strings (bytes);
# a text string is written as its UTF-8 bytes, a binary one as its bytes.
class Tempfile
  # Like MRI's finalizer: a Tempfile garbage-collected while open is closed and removed, so
  # uploads nobody closed (no Rack::TempfileReaper) do not pile up in the temp dir.
  REAPER = `new FinalizationRegistry(function(held) {
    try { require('fs').closeSync(held.fd) } catch (e) {}
    if (held.path) { try { require('fs').unlinkSync(held.path) } catch (e) {} }
  })`

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
    prefix, suffix = basename.is_a?(Array) ? basename : [basename, '']
    dir = tmpdir || `require('os').tmpdir()`
    name = "#{prefix}#{Time.now.strftime('%Y%m%d')}-#{`process.pid`}-#{rand(0x100000000).to_s(36)}#{suffix}"
    @path = `require('path').join(String(#{dir}), String(#{name}))`
    @fd = `require('fs').openSync(#{@path}, 'w+', 0o600)`
    @pos = 0
    @held = `{ fd: #{@fd}, path: #{@path} }`
    `#{REAPER}.register(#{self}, #{@held}, #{self})`
  end

  def write(*strings)
    check_open
    strings.sum do |s|
      buf = RackCompat::Bytes.to_buffer(s.to_s)
      n = `require('fs').writeSync(#{@fd}, #{buf}, 0, #{buf}.length, #{@pos})`
      @pos += n
      n
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

  def puts(*lines)
    lines = [''] if lines.empty?
    lines.flatten.each { |l| write(l.to_s.end_with?("\n") ? l.to_s : "#{l}\n") }
    nil
  end

  # MRI's IO#read: all the rest ("" at EOF) without a length, nil at EOF with one.
  # `outbuf` cannot be filled in place (Opal strings are immutable); the data is returned.
  def read(length = nil, outbuf = nil)
    check_open
    return '' if length == 0

    want = length || [size - @pos, 0].max
    return (length ? nil : RackCompat::Bytes.binary('')) if want == 0

    buf = `Buffer.alloc(#{want})`
    got = `require('fs').readSync(#{@fd}, #{buf}, 0, #{want}, #{@pos})`
    @pos += got
    return nil if got == 0 && length

    RackCompat::Bytes.from_buffer(`#{buf}.subarray(0, #{got})`)
  end
  alias readpartial read
  alias sysread read

  def gets(sep = $/)
    return nil if eof?

    line = []
    while (chunk = read(4096))
      if (i = chunk.index(sep))
        line << chunk[0, i + sep.length]
        @pos -= chunk.length - (i + sep.length)
        break
      end
      line << chunk
    end
    RackCompat::Bytes.binary(line.join)
  end

  def each(sep = $/)
    return enum_for(:each, sep) unless block_given?

    while (line = gets(sep))
      yield line
    end
    self
  end
  alias each_line each

  def rewind
    @pos = 0
    0
  end

  def seek(offset, whence = IO::SEEK_SET)
    base = case whence
           when IO::SEEK_CUR then @pos
           when IO::SEEK_END then size
           else 0
           end
    @pos = base + offset
    0
  end

  def pos
    @pos
  end
  alias tell pos

  def pos=(pos)
    @pos = pos
  end

  def eof?
    @pos >= size
  end
  alias eof eof?

  def size
    return File.size(@path) if @fd.nil? && @path

    `require('fs').fstatSync(#{@fd}).size`
  end
  alias length size

  def binmode
    self
  end

  def binmode?
    true
  end

  def set_encoding(*)
    self
  end

  def flush
    self
  end

  def fsync
    0
  end

  def to_path
    @path
  end

  def close(unlink_now = false)
    `require('fs').closeSync(#{@fd})` if @fd
    @fd = nil
    unlink if unlink_now
    `#{REAPER}.unregister(#{self})` unless @path
    nil
  end

  def closed?
    @fd.nil?
  end

  def close!
    close(true)
  end

  def open
    @fd ||= `require('fs').openSync(#{@path}, 'r+')`
    @pos = 0
    self
  end

  def unlink
    return unless @path

    `try { require('fs').unlinkSync(#{@path}) } catch (e) {}`
    @path = nil
    `#{@held}.path = null`
  end

  def chmod(mode)
    `require('fs').fchmodSync(#{@fd}, #{mode})` if @fd
    0
  end
  alias delete unlink

  def inspect
    "#<Tempfile:#{@path}>"
  end

  private

  def check_open
    raise IOError, 'closed stream' if @fd.nil?
  end
end
