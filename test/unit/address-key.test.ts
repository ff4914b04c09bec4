import { expect } from 'chai';
import { addressKey } from '../../src/services/limits.js';

describe('the network a per-address limit counts', () => {
  it('is an IPv4 address itself', () => {
    expect(addressKey('203.0.113.7')).to.equal('203.0.113.7');
    expect(addressKey('203.0.113.8')).to.not.equal(addressKey('203.0.113.7'));
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    const key = addressKey('2001:db8:1:2::1');
    expect(key).to.equal('2001:db8:1:2::/64');
    for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:0000:0000:0000:0abc', '2001:db8:1:2:a:b:1.2.3.4', '2001:db8:1:2::9%eth0']) {
      expect(addressKey(same), same).to.equal(key);
    }
    expect(addressKey('2001:db8:1:3::1')).to.not.equal(key);
    expect(addressKey('::1')).to.equal('0:0:0:0::/64');
  });

  it('is the IPv4 address an IPv4-mapped IPv6 address stands for', () => {
    expect(addressKey('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(addressKey('::FFFF:cb00:7107')).to.equal('203.0.113.7');
    expect(addressKey('0:0:0:0:0:ffff:203.0.113.7')).to.equal('203.0.113.7');
  });

  it('keeps anything that is not an address as it is', () => {
    expect(addressKey('')).to.equal('');
  });
});
