# frozen_string_literal: true

# Rewrites of Rack 3.2.8 methods of the same names, derived from them (Rack is MIT licensed,
# Copyright (C) 2007-2021 Leah Neukirchen).
require 'rack/directory'

# Rack::Directory#list_directory appends '/' to a directory's url and name with <<; Opal
# strings are immutable, so they are rebuilt. Same listing as Rack 3.2.8.
module Rack
  class Directory
    def list_directory(path_info, path, script_name)
      url_head = (script_name.split('/') + path_info.split('/')).map do |part|
        Utils.escape_path part
      end

      body = DirectoryBody.new(@root, path, ->(basename) do
        stat = stat(::File.join(path, basename))
        next unless stat

        url = ::File.join(*url_head + [Utils.escape_path(basename)])
        mtime = stat.mtime.httpdate
        if stat.directory?
          type = 'directory'
          size = '-'
          url = "#{url}/"
          basename = basename == '..' ? 'Parent Directory' : "#{basename}/"
        else
          type = Mime.mime_type(::File.extname(basename))
          size = filesize_format(stat.size)
        end

        [url, basename, size, type, mtime]
      end)

      [200, { CONTENT_TYPE => 'text/html; charset=utf-8' }, body]
    end
  end
end
