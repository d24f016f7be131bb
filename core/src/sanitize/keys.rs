//! PII split across JSON structure: object keys that name a kind of personal
//! data or a secret, so that their value is redacted whole.

use super::pii::PiiKind;

/// The PII kind an object key names, if any.
///
/// The key is split into lowercase words at `_`, `-`, `.`, spaces and
/// lowerCamel humps (`billingEmail` → `billing email`). The key names a kind
/// when its last word, or its last two words joined, is one of:
///
/// - `EMAIL`: email, emailaddress, mail only as `e mail`; plural `emails`.
/// - `PHONE`: phone, phonenumber, telephone, tel, mobile, mobilenumber,
///   cellphone, cell, fax, msisdn; plurals `phones`, `phonenumbers`.
/// - `US_SSN`: ssn, socialsecuritynumber, socialsecurity.
/// - `CREDIT_CARD`: cardnumber, creditcard, creditcardnumber, ccnumber, pan, cardno.
/// - `IBAN`: iban.
/// - `IP_ADDRESS`: ip, ipaddress, ipaddr, remoteaddr, clientip; plural `ips`.
/// - `MAC_ADDRESS`: macaddress, mac.
/// - `DATE_OF_BIRTH`: dob, dateofbirth, birthdate, birthday.
/// - `SECRET`: password, passwd, pwd, passphrase, secret, clientsecret,
///   apikey, apisecret, token, accesstoken, refreshtoken, idtoken,
///   authtoken, bearertoken, sessiontoken, csrftoken, privatekey,
///   secretkey, accesskey, secretaccesskey, authorization, cookie,
///   setcookie, sessionid, connectionstring; but not when the key is a
///   pagination or count word (`next_page_token`, `token_count`,
///   `max_tokens`, `token_type` end in other words or are listed as
///   exceptions: pagetoken, nexttoken, continuationtoken, synctoken).
///
/// Strings and numbers under such a key become the placeholder; an empty or
/// blank string, `null`, booleans and objects are left to the ordinary
/// rules. Arrays of strings are redacted element-wise for the kinds whose
/// plural is listed, and for `SECRET`.
pub fn key_kind(key: &str) -> Option<PiiKind> {
    if key.len() > 64 {
        return None;
    }
    let words = split_words(key);
    let n = words.len();
    let last = words.last()?;
    if let Some(k) = kind_of(last) {
        // A pagination token is no secret.
        if k == PiiKind::Secret && n >= 2 {
            let prev = words.get(n - 2).map(String::as_str).unwrap_or("");
            if matches!(prev, "page" | "next" | "continuation" | "sync" | "cursor" | "prev" | "previous") {
                return None;
            }
        }
        return Some(k);
    }
    if n >= 2 {
        let two = format!("{}{}", words.get(n - 2)?, last);
        if let Some(k) = kind_of(&two) {
            return Some(k);
        }
    }
    if n >= 3 {
        let three = format!("{}{}{}", words.get(n - 3)?, words.get(n - 2)?, last);
        if let Some(k) = kind_of(&three) {
            return Some(k);
        }
    }
    None
}

fn kind_of(w: &str) -> Option<PiiKind> {
    Some(match w {
        "email" | "emails" | "emailaddress" | "emailaddresses" | "email_address" => PiiKind::Email,
        "phone" | "phones" | "phonenumber" | "phonenumbers" | "telephone" | "tel" | "mobile" | "mobilenumber" | "mobilephone" | "cellphone"
        | "fax" | "faxnumber" | "msisdn" => PiiKind::Phone,
        "ssn" | "socialsecuritynumber" | "socialsecurity" => PiiKind::UsSsn,
        "cardnumber" | "creditcard" | "creditcardnumber" | "ccnumber" | "pan" | "cardno" => PiiKind::CreditCard,
        "iban" => PiiKind::Iban,
        "ip" | "ips" | "ipaddress" | "ipaddr" | "remoteaddr" | "ipv4" | "ipv6" => PiiKind::IpAddress,
        "mac" | "macaddress" | "macaddr" => PiiKind::MacAddress,
        "dob" | "dateofbirth" | "birthdate" | "birthday" => PiiKind::DateOfBirth,
        "password" | "passwd" | "pwd" | "passphrase" | "secret" | "clientsecret" | "apikey" | "apisecret" | "token" | "accesstoken"
        | "refreshtoken" | "idtoken" | "authtoken" | "bearertoken" | "sessiontoken" | "csrftoken" | "privatekey" | "secretkey" | "accesskey"
        | "secretaccesskey" | "authorization" | "cookie" | "setcookie" | "sessionid" | "connectionstring" => PiiKind::Secret,
        _ => return None,
    })
}

fn split_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' || c == ':' || c == '/' {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(key_kind("email"), Some(PiiKind::Email));
        assert_eq!(key_kind("billingEmail"), Some(PiiKind::Email));
        assert_eq!(key_kind("email_address"), Some(PiiKind::Email));
        assert_eq!(key_kind("phone_number"), Some(PiiKind::Phone));
        assert_eq!(key_kind("api_key"), Some(PiiKind::Secret));
        assert_eq!(key_kind("X-Api-Key"), Some(PiiKind::Secret));
        assert_eq!(key_kind("access_token"), Some(PiiKind::Secret));
        assert_eq!(key_kind("next_page_token"), None);
        assert_eq!(key_kind("max_tokens"), None);
        assert_eq!(key_kind("token_type"), None);
        assert_eq!(key_kind("zip"), None);
        assert_eq!(key_kind("client_ip"), Some(PiiKind::IpAddress));
        assert_eq!(key_kind("card_number"), Some(PiiKind::CreditCard));
        assert_eq!(key_kind("ssn"), Some(PiiKind::UsSsn));
        assert_eq!(key_kind("iban"), Some(PiiKind::Iban));
        assert_eq!(key_kind("date_of_birth"), Some(PiiKind::DateOfBirth));
        assert_eq!(key_kind("email_verified"), None);
        assert_eq!(key_kind("name"), None);
    }
}
