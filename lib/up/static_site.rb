# frozen_string_literal: true

require "json"

module Up
  # A static site's config (--static-config FILE), in the shape of the static buildpack's
  # static.json:
  #
  #   { "root": "public_html/", "clean_urls": true, "error_page": "404.html",
  #     "headers": { "/assets/**": { "Cache-Control": "public, max-age=31536000" } },
  #     "redirects": { "/old/*": { "url": "/new", "status": 302 } },
  #     "https_only": true }
  #
  # root is relative to the file's directory (public_html/ when not given, as the buildpack's);
  # error_page relative to root. Globs match the decoded request path ("*" within a segment,
  # "**" across them). Keys UP! does not implement are refused by name rather than ignored.
  # Created by Up::StaticFiles; owns nothing but its values.
  class StaticSite
    class Error < StandardError; end

    KEYS = %w[root clean_urls error_page headers redirects https_only].freeze
    REDIRECT_STATUSES = [301, 302, 303, 307, 308].freeze
    DEFAULT_ROOT = "public_html/"

    # root: an absolute path; error_page: "/404.html" or nil; headers: [[glob, name, value]];
    # redirects: [[glob, url, status]].
    attr_reader :root, :error_page, :headers, :redirects

    def self.load(path)
      new(JSON.parse(File.read(path)), File.dirname(File.expand_path(path)), path)
    rescue JSON::ParserError => e
      raise Error, "#{path} is not valid JSON: #{e.message.lines.first.chomp}"
    rescue SystemCallError => e
      raise Error, "cannot read #{path}: #{e.message}"
    end

    def initialize(config, dir, name = "static.json")
      @name = name
      raise Error, "#{name} must hold a JSON object" unless config.is_a?(Hash)

      unknown = config.keys - KEYS
      raise Error, "#{name}: #{unknown.map(&:inspect).join(", ")} not supported (UP! reads #{KEYS.join(", ")})" if unknown.any?

      @root = File.expand_path(string(config, "root") || DEFAULT_ROOT, dir)
      @clean_urls = boolean(config, "clean_urls")
      @https_only = boolean(config, "https_only")
      page = string(config, "error_page")
      @error_page = page && "/#{page.delete_prefix("/")}"
      @headers = read_headers(config.fetch("headers", {}))
      @redirects = read_redirects(config.fetch("redirects", {}))
    end

    def clean_urls?
      @clean_urls
    end

    def https_only?
      @https_only
    end

    private

    def string(config, key)
      value = config[key]
      return nil if value.nil?
      raise Error, "#{@name}: #{key} must be a string" unless value.is_a?(String) && !value.empty?

      value
    end

    def boolean(config, key)
      value = config.fetch(key, false)
      raise Error, "#{@name}: #{key} must be true or false" unless [true, false].include?(value)

      value
    end

    def read_headers(table)
      raise Error, "#{@name}: headers must map path globs to objects of fields" unless table.is_a?(Hash)

      table.flat_map do |glob, fields|
        raise Error, "#{@name}: headers #{glob.inspect} must be an object of fields" unless fields.is_a?(Hash)

        fields.map do |name, value|
          raise Error, "#{@name}: headers #{glob.inspect}: #{name} must be a string" unless value.is_a?(String)

          [glob, name, value]
        end
      end
    end

    def read_redirects(table)
      raise Error, "#{@name}: redirects must map path globs to objects" unless table.is_a?(Hash)

      table.map do |glob, target|
        url = target.is_a?(Hash) && target["url"]
        raise Error, "#{@name}: redirects #{glob.inspect} needs a \"url\"" unless url.is_a?(String) && !url.empty?

        status = target.fetch("status", 301)
        unless REDIRECT_STATUSES.include?(status)
          raise Error, "#{@name}: redirects #{glob.inspect}: status must be one of #{REDIRECT_STATUSES.join(", ")}"
        end

        [glob, url, status]
      end
    end
  end
end
