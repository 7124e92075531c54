# frozen_string_literal: true

# Errno classes Rack names that Opal does not define (Opal has nine). Rack::Directory
# rescues Errno::ELOOP, Rack::Files ENOTDIR and Rack::Reloader ESRCH; naming a
# missing class in a rescue list raises NameError the moment anything is raised.
module Errno
  {
    ENOTDIR: ['Not a directory', 20],
    ELOOP: ['Too many levels of symbolic links', 40],
    ESRCH: ['No such process', 3],
    EPIPE: ['Broken pipe', 32],
    ECONNRESET: ['Connection reset by peer', 104],
    EAGAIN: ['Resource temporarily unavailable', 11],
  }.each do |name, (default_message, errno)|
    next if const_defined?(name)

    klass = Class.new(SystemCallError) do
      define_singleton_method(:errno) { errno }
      define_singleton_method(:new) do |detail = nil|
        super(detail ? "#{default_message} - #{detail}" : default_message)
      end
    end
    const_set(name, klass)
  end
end
